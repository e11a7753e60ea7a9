import t from 'tap';
import { AUTH_KEY, startGateway } from '../management/support/gateway.ts';
import { runCli as cli } from '../helpers/run-cli.ts';

// A usage error names the option left out and what it takes, not only the usage line; an
// unknown AccessKey id is said in words, not as an API error code and its JSON.

t.test('resolve without --operation names it and the protocol\'s operations, exit 2', async (t) => {
  const r = await cli(['resolve', '--protocol', 'x-messages', '--channel', 'ch14']);
  t.equal(r.status, 2);
  t.equal(r.stderr.split('\n')[0], 'switchyard: resolve needs --operation (one of: messages-create, messages-count-tokens)');
  t.match(r.stderr, /^usage: switchyard resolve --protocol P --operation O --channel chNN/m, 'the usage line follows');
});

t.test('resolve with nothing names all three', async (t) => {
  const r = await cli(['resolve']);
  t.equal(r.status, 2);
  t.match(r.stderr.split('\n')[0], /^switchyard: resolve needs --protocol \(one of: x-completions, .*\), --operation \(.+\) and --channel \(ch01 to ch\d\d\)$/);
});

t.test('resolve with a protocol, operation or channel the manifests do not declare: a usage error naming what it takes, exit 2', async (t) => {
  // A typo is not the engine's refusal of a real cell: a script would take its exit 1 for one.
  const cases: [string[], string][] = [
    [['--protocol', 'x-foo', '--operation', 'chat-completions', '--channel', 'ch09'], 'switchyard: --protocol must be one of x-completions, '],
    [['--protocol', 'x-completions', '--operation', 'messages-create', '--channel', 'ch09'], 'switchyard: --operation of x-completions must be one of chat-completions, not "messages-create"'],
    [['--protocol', 'x-completions', '--operation', 'chat-completions', '--channel', 'ch9'], 'switchyard: --channel must be one of ch01 to ch'],
  ];
  for (const [args, said] of cases) {
    const r = await cli(['resolve', ...args, '--json']);
    t.equal(r.status, 2, args.join(' '));
    t.equal(r.stdout, '', 'nothing on stdout for a script to parse as an answer');
    t.equal(r.stderr.slice(0, said.length), said);
    t.match(r.stderr, /^usage: switchyard resolve /m, 'the usage line follows');
  }
});

t.test('inspect without --access-key names it, exit 2', async (t) => {
  const r = await cli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model']);
  t.equal(r.status, 2);
  t.match(r.stderr.split('\n')[0], /^switchyard: inspect needs --access-key \(.*AccessKey.*\)$/);
});

t.test('inspect with an AccessKey id that does not exist: said in words, offline and against a server, exit 1', async (t) => {
  const gw = await startGateway(t);
  const offline = await cli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', '99', '--data', gw.dataDir]);
  t.equal(offline.status, 1);
  t.equal(offline.stderr, `switchyard: no AccessKey with id 99 in ${gw.dataDir}\n`);
  const remote = await cli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', '99', '--url', gw.url], { AUTH_KEY });
  t.equal(remote.status, 1);
  t.equal(remote.stderr, `switchyard: no AccessKey with id 99 at ${gw.url}\n`);
});

t.test('inspect --url that fetch cannot use (a user or password, a scheme other than http/https): a usage error that does not echo the password, exit 2', async (t) => {
  const withUser = await cli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', '1', '--url', 'http://admin:hunter2@127.0.0.1:1'], { AUTH_KEY });
  t.equal(withUser.status, 2);
  t.equal(withUser.stderr.split('\n')[0], 'switchyard: --url must not carry a user or password (the AUTH_KEY goes in the environment variable AUTH_KEY)');
  t.notMatch(withUser.stderr, /hunter2/);
  const ftp = await cli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', '1', '--url', 'ftp://127.0.0.1:1'], { AUTH_KEY });
  t.equal(ftp.status, 2);
  t.equal(ftp.stderr.split('\n')[0], 'switchyard: --url must be an http or https URL, not "ftp://127.0.0.1:1"');
});

t.test('inspect --url with an AUTH_KEY the server refuses says so, without an empty JSON tail, exit 1', async (t) => {
  const gw = await startGateway(t);
  const r = await cli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', '1', '--url', gw.url], { AUTH_KEY: 'sy-admin-not-this-servers' });
  t.equal(r.status, 1);
  t.equal(r.stderr, `switchyard: ${gw.url}/api/route/inspect answered 401 UNAUTHORIZED: the AUTH_KEY in the environment is not this server's\n`);
  t.notMatch(r.stderr, /not-this-servers/, 'the key itself is not echoed');
});

t.test('inspect --url with an AUTH_KEY no header can carry (a line break) says so, without the key, not that the server cannot be reached, exit 2', async (t) => {
  const gw = await startGateway(t);
  const r = await cli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', '1', '--url', gw.url], { AUTH_KEY: `${AUTH_KEY}\nsecond-line` });
  t.equal(r.status, 2);
  t.equal(r.stderr, 'switchyard: the AUTH_KEY in the environment holds a character an HTTP header cannot carry (a line break, say)\n');
});
