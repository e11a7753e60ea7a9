import t from 'tap';
import { CHANNEL_IDS, OPERATIONS, type OperationId } from '../../src/generated/index.ts';
import { resolve, type Resolution } from '../../src/engine/index.ts';
import { readSpecMatrix } from '../fixtures/read-spec-matrix.ts';
import { DECISIONS_ENDPOINTS } from '../fixtures/decisions-endpoints.ts';

const spec = readSpecMatrix();
const COLUMNS = ['CC', 'RC', 'MS', 'GG', 'IMG', 'EMB', 'CT-M', 'CT-G', 'RIT', 'RRA'];
// Note 3 read from the specification's text: the sub-operations each N* channel keeps.
const NATIVE_SUBSETS: Record<string, string[]> = {
  ch32: ['compaction', 'namespace_passthrough'],
  ch33: ['compaction', 'namespace_passthrough'],
  ch34: ['compaction'],
};
const CONVERSATION_COLUMNS = ['CC', 'RC', 'MS', 'GG'];

/** Operations of one matrix column, taken from decisions.md's endpoint list, not the manifest. */
function operationsOf(column: string): { id: OperationId; sub?: string }[] {
  return DECISIONS_ENDPOINTS.filter((e) => e.column === column).map((e) => {
    const op = Object.values(OPERATIONS).find((o) => o.method === e.method && o.path === e.path);
    if (!op) throw new Error(`no operation for ${e.method} ${e.path}`);
    return e.sub ? { id: op.id, sub: e.sub } : { id: op.id };
  });
}

function cellOf(channel: string, column: string): string {
  const row = [...spec.core, ...spec.additional].find((r) => r.channel === channel && column in r.cells);
  if (!row) throw new Error(`spec has no cell ${channel} ${column}`);
  return row.cells[column]!;
}

t.test('the fixture covers all 35 channels in both tables', async (t) => {
  t.same(spec.core.map((r) => r.channel), CHANNEL_IDS);
  t.same(spec.additional.map((r) => r.channel), CHANNEL_IDS);
});

for (const channel of CHANNEL_IDS) {
  t.test(channel, async (t) => {
    for (const column of COLUMNS) {
      const symbol = cellOf(channel, column);
      for (const op of operationsOf(column)) {
        const protocol = OPERATIONS[op.id].protocol;
        const ask = (model?: string): Resolution => resolve({ protocol, operation: op.id, channel, ...(model ? { model } : {}) });
        const label = `${channel} ${column} ${op.id} (spec: ${symbol})`;
        if (symbol === '-') {
          const r = ask('any-model');
          t.equal(r.ok, false, `${label} is refused`);
          if (!r.ok && channel.match(/^ch0[18]$/) && CONVERSATION_COLUMNS.includes(column)) t.equal(r.reason_code, 'not_a_conversation_channel', label);
          if (!r.ok && ['ch29', 'ch30'].includes(channel) && ['GG', 'RRA'].includes(column)) t.match(r, { reason_code: 'restricted_by_channel_note', note: 11 }, label);
        } else if (symbol === 'N') {
          t.match(ask('any-model'), { ok: true, declared: 'N', effective: 'native' }, label);
        } else if (symbol === 'C') {
          const r = ask('any-model');
          if (column === 'IMG' && op.sub === 'editing') t.match(r, { ok: false, reason_code: 'restricted_by_channel_note', note: 1 }, `${label}: note 1, no editing`);
          else t.match(r, { ok: true, declared: 'C', effective: 'converted', wire: String }, label);
        } else if (symbol === 'N/C') {
          t.match(ask('gemini-2.5-pro'), { ok: true, declared: 'N/C', effective: 'native' }, `${label} native model`);
          t.match(ask('claude-sonnet-4-5'), { ok: true, declared: 'N/C', effective: 'converted', wire: String }, `${label} other model`);
          t.match(ask(), { ok: false, reason_code: 'model_required' }, `${label} without a model`);
        } else if (symbol === 'N*') {
          const allowed = NATIVE_SUBSETS[channel] ?? [];
          if (allowed.includes(op.sub ?? '')) t.match(ask(), { ok: true, declared: 'N*', effective: 'native' }, label);
          else t.match(ask(), { ok: false, reason_code: 'operation_outside_native_subset', note: 3 }, label);
        } else {
          t.fail(`unknown symbol ${symbol} in the fixture`);
        }
      }
    }
  });
}
