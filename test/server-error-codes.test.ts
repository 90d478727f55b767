// Error codes: each code of the table (queue/errors.ts) is one a request can get, with the code's
// status and the error shape; the "Error codes" table of docs/api.md and the OpenAPI document list
// exactly the table's codes. (Every error reply of every test server is also checked against the
// document, whose Error schema requires a code from the table: test/support/openapi-contract.ts.)
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../queue/errors.ts';
import { MAX_NAME_LENGTH } from '../queue/defaults.ts';
import { createServer } from '../server/index.ts';
import { TOKEN_SPEC, TOKENS, testLogger, testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer({ tokens: TOKEN_SPEC });
});
afterAll(() => s.close());

const admin = { authorization: `Bearer ${TOKENS.admin}` };
const json = { ...admin, 'content-type': 'application/json' };

/** One request per code: what to send (after an optional setup), and a word of the message. */
const cases: { code: ErrorCode; what: string; request: () => Promise<InjectOptions>; text: RegExp }[] = [
  { code: 'HERALD_VALIDATION', what: 'a field breaks its rule', request: async () => ({ method: 'POST', url: '/api/jobs', headers: admin, payload: { kind: '' } }), text: /^kind must be/ },
  {
    code: 'HERALD_VALIDATION',
    what: 'a path parameter longer than any name',
    request: async () => ({ method: 'PATCH', url: `/api/queues/${'q'.repeat(MAX_NAME_LENGTH + 1)}`, headers: admin, payload: { paused: true } }),
    text: /path parameter is longer than 128 characters/,
  },
  { code: 'HERALD_INVALID_JSON', what: 'a truncated body', request: async () => ({ method: 'POST', url: '/api/jobs', headers: json, payload: '{"kind":' }), text: /JSON/ },
  { code: 'HERALD_INVALID_JSON', what: 'an empty JSON body', request: async () => ({ method: 'POST', url: '/api/jobs', headers: json, payload: '' }), text: /empty/ },
  {
    code: 'HERALD_INVALID_CURSOR',
    what: 'a cursor the server never issued',
    request: async () => ({ method: 'GET', url: '/api/events?lastEventId=zzz', headers: { ...admin, accept: 'text/event-stream' } }),
    text: /not a cursor this server issued/,
  },
  {
    code: 'HERALD_BAD_REQUEST',
    what: 'a body shorter than its content-length',
    request: async () => ({ method: 'POST', url: '/api/jobs', headers: { ...json, 'content-length': '3' }, payload: '{"kind":"k"}' }),
    text: /Content-Length/,
  },
  { code: 'HERALD_BAD_REQUEST', what: 'a path that does not decode', request: async () => ({ method: 'GET', url: '/api/jobs/%E0%A4%A', headers: admin }), text: /URL is not valid/ },
  { code: 'HERALD_UNAUTHORIZED', what: 'no token', request: async () => ({ method: 'GET', url: '/api/jobs' }), text: /needs a token/ },
  {
    code: 'HERALD_FORBIDDEN',
    what: 'a viewer token on an admin route',
    request: async () => ({ method: 'POST', url: '/api/jobs/1/cancel', headers: { authorization: `Bearer ${TOKENS.viewer}` } }),
    text: /a viewer token cannot POST/,
  },
  { code: 'HERALD_NOT_FOUND', what: 'a missing job', request: async () => ({ method: 'GET', url: '/api/jobs/424242', headers: admin }), text: /does not exist/ },
  { code: 'HERALD_NOT_FOUND', what: 'a missing schedule', request: async () => ({ method: 'DELETE', url: '/api/schedules/none', headers: admin }), text: /does not exist/ },
  { code: 'HERALD_ROUTE_NOT_FOUND', what: 'no such route', request: async () => ({ method: 'GET', url: '/api/nope', headers: admin }), text: /no route GET \/api\/nope/ },
  {
    code: 'HERALD_NOT_ACCEPTABLE',
    what: 'a stream request that refuses event streams',
    request: async () => ({ method: 'GET', url: '/api/events', headers: { ...admin, accept: 'application/json' } }),
    text: /text\/event-stream/,
  },
  {
    code: 'HERALD_CONFLICT_IDEMPOTENCY',
    what: 'a key reused for another job',
    request: async () => {
      await s.queue.enqueue({ kind: 'a', idempotencyKey: 'codes-1' });
      return { method: 'POST', url: '/api/jobs', headers: admin, payload: { kind: 'b', idempotencyKey: 'codes-1' } };
    },
    text: /already made job/,
  },
  {
    code: 'HERALD_JOB_NOT_CANCELLABLE',
    what: 'cancelling a cancelled job',
    request: async () => {
      const { job } = await s.queue.enqueue({ kind: 'k' });
      await s.queue.cancel(job.id);
      return { method: 'POST', url: `/api/jobs/${job.id}/cancel`, headers: admin };
    },
    text: /only queued, blocked or running jobs can be cancelled/,
  },
  {
    code: 'HERALD_JOB_NOT_RETRYABLE',
    what: 'retrying a queued job',
    request: async () => {
      const { job } = await s.queue.enqueue({ kind: 'k' });
      return { method: 'POST', url: `/api/jobs/${job.id}/retry`, headers: admin };
    },
    text: /only failed or cancelled jobs can be retried/,
  },
  {
    code: 'HERALD_JOB_NOT_SCHEDULED',
    what: 'running now a job that is due already',
    request: async () => {
      const { job } = await s.queue.enqueue({ kind: 'k' });
      return { method: 'POST', url: `/api/jobs/${job.id}/run-now`, headers: admin };
    },
    text: /is due already; run now applies to a queued job waiting out its backoff or its runAt/,
  },
  {
    code: 'HERALD_SIGNAL_SENT',
    what: 'a second signal of one name',
    request: async () => {
      const { job } = await s.queue.enqueue({ kind: 'k' });
      await s.queue.signal(job.id, 'approve', true);
      return { method: 'POST', url: `/api/jobs/${job.id}/signals/approve`, headers: admin, payload: { payload: false } };
    },
    text: /already holds a signal "approve"/,
  },
  {
    code: 'HERALD_BODY_TOO_LARGE',
    what: 'a body over 1 MiB',
    request: async () => ({ method: 'POST', url: '/api/jobs', headers: admin, payload: { kind: 'k', payload: 'x'.repeat(1024 * 1024) } }),
    text: /larger than 1 MiB/,
  },
  {
    code: 'HERALD_UNSUPPORTED_MEDIA_TYPE',
    what: 'a text/plain body',
    request: async () => ({ method: 'POST', url: '/api/jobs', headers: { ...admin, 'content-type': 'text/plain' }, payload: 'kind=k' }),
    text: /text\/plain/,
  },
];

/** Codes whose request needs a broken server: checked below, or in the file named. */
const ELSEWHERE: Partial<Record<ErrorCode, string>> = {
  HERALD_INTERNAL: 'below: a statement on a table that is gone',
  HERALD_DATABASE_UNAVAILABLE: 'test/server-health.test.ts: the database goes away behind a proxy',
  HERALD_TOO_MANY_STREAMS: 'below: its own server with room for one stream',
  HERALD_MISDIRECTED: 'test/server-safer-defaults.test.ts: auth off, a Host that is not loopback',
  HERALD_CROSS_SITE: 'test/server-safer-defaults.test.ts: auth off, a write from a foreign Origin',
  HERALD_AUTH_REQUIRED: 'test/server-safer-defaults.test.ts: auth off, a request through a proxy',
};

function expectError(res: { statusCode: number; body: string; json: () => unknown }, code: ErrorCode, text: RegExp) {
  const status = ERROR_CODES[code].status;
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json()).toEqual({ statusCode: status, error: expect.any(String), message: expect.stringMatching(text), code });
}

describe('every code is one a request can get', () => {
  it.each(cases.map((c) => [c.code, c.what, c] as const))('%s: %s', async (_code, _what, c) => {
    expectError(await s.app.inject(await c.request()), c.code, c.text);
  });

  it('covers every code of the table', () => {
    const covered = new Set([...cases.map((c) => c.code), ...Object.keys(ELSEWHERE)]);
    expect(Object.keys(ERROR_CODES).filter((code) => !covered.has(code))).toEqual([]);
  });

  it('HERALD_TOO_MANY_STREAMS: a stream past HERALD_MAX_STREAMS', async () => {
    // Its own listening server with room for one stream, which a real SSE client holds open.
    const capped = await testServer({ db: s.db, listen: true, maxStreams: 1 });
    const held = new AbortController();
    try {
      const open = (signal?: AbortSignal) => fetch(`${capped.url}/api/events`, { headers: { accept: 'text/event-stream' }, signal });
      expect((await open(held.signal)).status).toBe(200);
      const refused = await open();
      const body = await refused.text();
      expectError({ statusCode: refused.status, body, json: () => JSON.parse(body) }, 'HERALD_TOO_MANY_STREAMS', /HERALD_MAX_STREAMS/);
      expect(refused.headers.get('retry-after')).toBe('5');
    } finally {
      held.abort();
      await capped.stop();
    }
  });

  // Fastify refused a body over the limit as soon as its content-length said so and closed the
  // connection after the reply: a client still writing its body met a closed socket (EPIPE, a
  // reset) and never read the 413. The client here sends the first bytes, waits until the server
  // has decided (its log says so, or its reply arrives: the old order), and only then the rest.
  it('HERALD_BODY_TOO_LARGE reaches a client that is still sending its body (no reset)', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) });
    const big = await testServer({ db: s.db, listen: true, logger: pino({ level: 'debug' }, sink) });
    try {
      const body = JSON.stringify({ kind: 'k', payload: 'x'.repeat(2 * 1024 * 1024) });
      const sock = net.connect(Number(new URL(big.url).port), '127.0.0.1');
      let reply = '';
      let failed: Error | undefined;
      const ended = new Promise<void>((resolve) => sock.on('close', () => resolve()));
      sock.on('data', (d: Buffer) => (reply += d.toString()));
      sock.on('error', (err) => (failed = err));
      sock.write(`POST /api/jobs HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`);
      sock.write(body.slice(0, 1000));
      await waitFor(() => reply.length > 0 || lines.some((l) => l.includes('a body over the limit')), { what: 'the server to refuse the body' });
      expect(reply).toBe('');
      await new Promise<void>((resolve, reject) => sock.write(body.slice(1000), (err) => (err ? reject(err) : resolve())));
      await ended;
      expect(failed).toBeUndefined();
      expect(reply).toMatch(/^HTTP\/1\.1 413 /);
      expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'HERALD_BODY_TOO_LARGE', message: expect.stringMatching(/larger than 1 MiB/) });
    } finally {
      await big.stop();
    }
  });

  it('addresses a queue whose name has the longest length allowed', async () => {
    const res = await s.app.inject({ method: 'PATCH', url: `/api/queues/${'q'.repeat(MAX_NAME_LENGTH)}`, headers: admin, payload: { paused: true } });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('HERALD_INTERNAL: a fault the request did not cause, without its details', async () => {
    // Its own server: a 500 is on no operation of the document, which test servers check replies against.
    const server = await createServer({ databaseUrl: s.db.url, logger: testLogger(), safetyMs: 100 });
    await s.db.pool.query('ALTER TABLE herald.schedules RENAME TO schedules_gone');
    try {
      const res = await server.app.inject({ method: 'GET', url: '/api/schedules' });
      expectError(res, 'HERALD_INTERNAL', /^internal server error \(request .+\); the server log has the details$/);
      expect(res.body).not.toMatch(/schedules|relation/);
    } finally {
      await s.db.pool.query('ALTER TABLE herald.schedules_gone RENAME TO schedules');
      await server.stop();
    }
  });
});

describe('the code table is documented', () => {
  it('in docs/api.md, one row per code with its status and meaning', () => {
    const doc = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');
    const section = doc.split('\n## Error codes\n')[1]?.split('\n#')[0] ?? '';
    const rows = [...section.matchAll(/^\| `(HERALD_\w+)` \| (\d{3}) \| (.+) \|$/gm)].map((m) => [m[1], Number(m[2]), m[3]]);
    expect(rows).toEqual(Object.entries(ERROR_CODES).map(([code, { status, meaning }]) => [code, status, meaning]));
  });

  it('in the OpenAPI document: the Error schema requires a code from the table', async () => {
    const doc = (await s.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const error = doc.components.schemas.Error;
    expect(error.required).toContain('code');
    expect(error.properties.code.enum).toEqual(Object.keys(ERROR_CODES));
  });
});
