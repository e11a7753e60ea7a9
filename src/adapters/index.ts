export { ADAPTERS } from './registry.ts';
export { adapterFamily, type ChannelAdapter } from './channel-adapter.ts';
