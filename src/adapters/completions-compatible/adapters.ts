import { adapterFamily } from '../channel-adapter.ts';

/** API-key channels whose upstream speaks the chat-completions dialect natively. */
export const completionsCompatibleAdapters = adapterFamily(
  { native: ['CC'], convertsInto: ['completions'], credentialKinds: ['api_key'], proxy: true, discovery: true },
  [
    { channel: 'ch02' },
    { channel: 'ch03', native: ['CC', 'EMB', 'x-suite'] },
    { channel: 'ch04', native: ['CC', 'EMB'] },
    { channel: 'ch05' },
    { channel: 'ch06' },
    { channel: 'ch07' },
    { channel: 'ch09', native: ['CC', 'RC', 'IMG', 'EMB', 'RIT', 'RRA'], convertsInto: ['completions', 'responses'] },
    { channel: 'ch19', native: ['CC', 'RC', 'MS'] },
    { channel: 'ch20' },
    { channel: 'ch21', native: ['CC', 'EMB', 'rerank'] },
    { channel: 'ch22' },
    { channel: 'ch23' },
    { channel: 'ch24' },
    { channel: 'ch25', native: ['CC', 'RC', 'EMB', 'decisions'] },
    { channel: 'ch26' },
    { channel: 'ch27' },
    { channel: 'ch28', native: ['CC', 'RC'] },
    { channel: 'ch29', native: ['CC', 'RC', 'MS'], convertsInto: [] },
    { channel: 'ch30', native: ['CC', 'RC', 'MS'], convertsInto: [] },
  ],
);
