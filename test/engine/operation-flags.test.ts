import t from 'tap';
import { OPERATIONS, PROTOCOLS, PROTOCOL_IDS, type OperationId } from '../../src/generated/index.ts';

// The generated table's counts_tokens and replay_safe flags against the rules they stand for,
// read from the table itself or from the words, not from the manifest's values.

const operations = Object.values(OPERATIONS);

t.test('counts_tokens: no operation that runs no model counts tokens', async (t) => {
  for (const op of operations) {
    // A WebSocket session opens with a GET; the session itself runs the model.
    if (op.method === 'GET' && op.body !== 'websocket') t.equal(op.counts_tokens, false, `${op.id}: a GET reads a stored object or list`);
    if (op.model === 'none') t.equal(op.counts_tokens, false, `${op.id}: names no model, so runs none`);
  }
  t.ok(operations.some((op) => op.method === 'GET' && op.body !== 'websocket'), 'the table has plain GET operations to check');
});

t.test("counts_tokens: every protocol's primary operation counts tokens", async (t) => {
  for (const protocol of PROTOCOL_IDS) {
    const primary = PROTOCOLS[protocol].primary_operation;
    t.equal(OPERATIONS[primary].counts_tokens, true, `${protocol} ${primary}`);
  }
});

// The issue: "image generation, embeddings, rerank, decisions, live and suite operations are
// retried only when the upstream provably rejected before processing". Each family as the
// protocols whose operations it names.
const NOT_REPLAY_SAFE_FAMILIES: { family: string; protocols: string[] }[] = [
  { family: 'image generation', protocols: ['x-images'] },
  { family: 'embeddings', protocols: ['x-chat-embeddings', 'x-embeddings'] },
  { family: 'rerank', protocols: ['rerank'] },
  { family: 'decisions', protocols: ['decisions'] },
  { family: 'live', protocols: ['x-live'] },
  { family: 'suite', protocols: ['x-suite'] },
];

// A GET that reads a stored list or object changes and bills nothing: safe to repeat although
// its family's generating operations are not.
const READS_SAFE_TO_REPEAT: Partial<Record<OperationId, string>> = {
  'voices-list': 'GET of the stored voices list',
  'voices-retrieve': 'GET of one stored voice',
  'voices-sample': "GET of a stored voice's sample audio",
};

// The generating text operations, which a failed attempt may move to another credential.
const REPLAY_SAFE_GENERATION: OperationId[] = ['chat-completions', 'responses-create', 'messages-create', 'generate-content', 'stream-generate-content'];

t.test('replay_safe is false for every operation of the families the issue names', async (t) => {
  for (const { family, protocols } of NOT_REPLAY_SAFE_FAMILIES) {
    const members = operations.filter((op) => protocols.includes(op.protocol));
    t.ok(members.length > 0, `${family}: the table has operations of ${protocols.join(', ')}`);
    for (const op of members) {
      const reason = READS_SAFE_TO_REPEAT[op.id];
      if (reason === undefined) t.equal(op.replay_safe, false, `${family}: ${op.id}`);
      else t.match(op, { method: 'GET', body: 'none' }, `${family}: ${op.id} is an exception, ${reason}`);
    }
  }
});

t.test('replay_safe is true for the generating text operations', async (t) => {
  for (const id of REPLAY_SAFE_GENERATION) t.equal(OPERATIONS[id].replay_safe, true, id);
});
