import { parseArgs } from 'node:util';
import { resolve, type Resolution } from '../../engine/index.ts';
import { unservedReason } from '../../dataplane/served-route.ts';
import { CliError } from '../cli-error.ts';

export function runResolve(argv: string[]): number {
  const { values } = parseArgs({
    args: argv,
    options: {
      protocol: { type: 'string' },
      operation: { type: 'string' },
      channel: { type: 'string' },
      model: { type: 'string' },
      stream: { type: 'boolean' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const { protocol, operation, channel } = values;
  if (!protocol || !operation || !channel) throw new CliError('usage: switchyard resolve --protocol P --operation O --channel chNN [--model M] [--stream] [--json]');
  const answer = resolve({ protocol, operation, channel, ...(values.model ? { model: values.model } : {}), ...(values.stream ? { features: { stream: true } } : {}) });
  const unserved = unservedReason(answer);
  const shown = unserved ? { ...answer, served: false, unserved_reason: unserved } : answer;
  process.stdout.write(values.json ? `${JSON.stringify(shown, null, 2)}\n` : `${describe(answer, unserved)}\n`);
  return answer.ok && !unserved ? 0 : 1;
}

function describe(r: Resolution, unserved: string | undefined): string {
  // The detail of a refusal a note caused ends with that note.
  if (!r.ok) return `refused: ${r.reason_code}: ${r.detail}`;
  const parts = [`${r.declared} -> ${r.effective}`];
  if (r.wire) parts.push(`wire ${r.wire}`);
  if (r.restrictions.length) parts.push(`restrictions: ${r.restrictions.join(', ')}`);
  if (r.notes.length) parts.push(`notes: ${r.notes.join(', ')}`);
  if (unserved) parts.push(`not served by this version: ${unserved}`);
  return parts.join('; ');
}
