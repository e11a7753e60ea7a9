#!/usr/bin/env node
// The CLI is TypeScript run through the tsx loader, so the published bin needs no build step.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/main.ts');
