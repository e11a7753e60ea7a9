export type * from './config-store.ts';
export type * from './records.ts';
export type { LogReader } from './log-store.ts';
export { systemClock, type Clock } from './clock.ts';
export { DEFAULT_SETTINGS } from './default-settings.ts';
export { maskSecret } from './mask.ts';
export { DATA_FILES, openLowdbConfigStore, StoreFileError, type OpenOptions } from './lowdb/index.ts';
export { MemoryLogStore } from './memory/memory-log-store.ts';
