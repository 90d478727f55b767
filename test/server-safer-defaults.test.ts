// Safer defaults of the server: a HERALD_TOKENS that would turn auth off by mistake refuses to
// start; the auth mode is logged once; tokens never reach a log; with auth off only loopback
// pages may act (Host and Origin); /api/health hides sessions and tables from anonymous callers.
import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTokens } from '../server/auth.ts';
import { startServer } from '../server/index.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { TOKEN_SPEC, TOKENS, testServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

/** A logger at trace level that keeps every line it writes. */
function capturingLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, logger: pino({ level: 'trace' }, sink) };
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

describe('HERALD_TOKENS that holds no valid token', () => {
  it.each([
    [' , ', /entry 1 of 2 is empty/],
    ['', /entry 1 of 1 is empty/],
    [',,', /entry 1 of 3 is empty/],
    ['viewer:ok-0123456789abcdef,', /entry 2 of 2 is empty/],
    ['root:hunter2-secret', /entry 1 of 1 has an unknown role/],
    ['admin:', /entry 1 of 1 has no token/],
    ['admin:alice:', /entry 1 of 1 has no token after its label/],
    ['viewer:fine-0123456789abcdef,hunter2-secret', /entry 2 of 2 has no role/],
    ['viewer:fine-0123456789abcdef,admin:bad label:hunter2-secret', /entry 2 of 2 has a bad label/],
  ])('%j is refused, naming the entry by position and printing no token', (spec, why) => {
    let message = '';
    try {
      parseTokens(spec);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(why);
    expect(message).not.toMatch(/hunter2|secret|fine|ok-|0123/);
  });

  it('refuses to start a server with blank tokens on 0.0.0.0, which would otherwise serve admin routes to anyone', async () => {
    await expect(startServer({ databaseUrl: db.url, host: '0.0.0.0', port: 0, tokens: ' , ' })).rejects.toThrow(/HERALD_TOKENS entry 1 of 2 is empty/);
  });
});

describe('the start-up log', () => {
  it.each([
    [undefined, 'auth: off (loopback only)'],
    [`${TOKEN_SPEC},viewer:viewer-two-000001`, 'auth: 2 viewer, 1 producer, 1 admin tokens'],
    ['admin:only-0123456789abcdef', 'auth: 1 admin token'],
  ])('with HERALD_TOKENS=%j says the auth mode once, and that it listens once', async (tokens, mode) => {
    const { lines, logger } = capturingLogger();
    const server = await startServer({ databaseUrl: db.url, port: 0, tokens, logger });
    await server.stop();
    const msgs = lines.map((l) => JSON.parse(l).msg as string);
    expect(msgs.filter((m) => m === mode)).toHaveLength(1);
    expect(msgs.filter((m) => m.startsWith('auth:'))).toHaveLength(1);
    expect(msgs.filter((m) => /listening/i.test(m))).toEqual([`Herald server listening on ${server.url}`]);
  });
});

describe('tokens in logs', () => {
  it('never writes ?token= to a log line, at any level', async () => {
    const { lines, logger } = capturingLogger();
    const s = await testServer({ db, tokens: TOKEN_SPEC, listen: true, logger });
    try {
      const ac = new AbortController();
      const stream = await fetch(`${s.url}/api/events?token=${TOKENS.viewer}`, { signal: ac.signal });
      expect(stream.status).toBe(200);
      ac.abort();
      expect((await fetch(`${s.url}/api/events?lastEventId=0&token=not-${TOKENS.admin}`)).status).toBe(401);
      await fetch(`${s.url}/api/jobs?token=${TOKENS.producer}`);
      await fetch(`${s.url}/nowhere?token=${TOKENS.admin}&x=1`);
      await waitFor(() => lines.filter((l) => l.includes('"msg":"request"')).length >= 3, { what: 'three request log lines' });
    } finally {
      await s.close();
    }
    const requests = lines.filter((l) => l.includes('"msg":"request"'));
    expect(requests.some((l) => l.includes('/api/events?lastEventId=0&token=[redacted]'))).toBe(true);
    expect(requests.some((l) => l.includes('/nowhere?token=[redacted]&x=1'))).toBe(true);
    for (const t of Object.values(TOKENS)) expect(lines.filter((l) => l.includes(t))).toEqual([]);
  });
});

describe('with auth off', () => {
  it('answers 421 to a Host that is not loopback (DNS rebinding)', async () => {
    const s = await testServer({ db });
    try {
      for (const host of ['evil.example', 'evil.example:3000', '192.168.1.5:3000', '0.0.0.0']) {
        const res = await s.app.inject({ method: 'GET', url: '/api/queues', headers: { host } });
        expect(res.statusCode, host).toBe(421);
        expect(res.json().code).toBe('HERALD_MISDIRECTED');
        expect(res.json().message).toMatch(/loopback Host/);
      }
      for (const host of ['127.0.0.1:3000', 'localhost:3000', '[::1]:3000', 'localhost']) {
        expect((await s.app.inject({ method: 'GET', url: '/api/queues', headers: { host } })).statusCode, host).toBe(200);
      }
      const cancel = await s.app.inject({ method: 'POST', url: '/api/jobs', headers: { host: 'rebound.example:3000' }, payload: { kind: 'k' } });
      expect(cancel.statusCode).toBe(421);
    } finally {
      await s.close();
    }
  });

  it('answers 403 to a state-changing request from a page of another site, and changes nothing', async () => {
    const s = await testServer({ db });
    try {
      const before = (await s.queue.list({})).jobs.length;
      for (const origin of ['https://evil.example', 'null', 'http://192.168.1.5:3000']) {
        const post = await s.app.inject({ method: 'POST', url: '/api/jobs', headers: { origin }, payload: { kind: 'cross-site' } });
        expect(post.statusCode, origin).toBe(403);
        expect(post.json()).toMatchObject({ code: 'HERALD_CROSS_SITE', message: expect.stringMatching(/another site/) });
        const pause = await s.app.inject({ method: 'PATCH', url: '/api/queues/q-origin', headers: { origin }, payload: { paused: true } });
        expect(pause.statusCode, origin).toBe(403);
      }
      expect((await s.queue.list({})).jobs.length).toBe(before);
      expect((await s.app.inject({ method: 'GET', url: '/api/queues' })).json().queues.map((q: { queue: string }) => q.queue)).not.toContain('q-origin');
      // The board itself (same origin on loopback) and tools that send no Origin still work.
      const board = await s.app.inject({ method: 'POST', url: '/api/jobs', headers: { origin: 'http://127.0.0.1:3000' }, payload: { kind: 'same-site' } });
      expect(board.statusCode).toBe(201);
      expect((await s.app.inject({ method: 'POST', url: '/api/jobs', payload: { kind: 'curl' } })).statusCode).toBe(201);
      // Reads are not blocked by Origin (the browser keeps their answer from the other site anyway).
      expect((await s.app.inject({ method: 'GET', url: '/api/queues', headers: { origin: 'https://evil.example' } })).statusCode).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe('with auth off, behind a proxy on this host', () => {
  // A reverse proxy on this host connects from loopback and nginx's default proxy_pass sends
  // Host: 127.0.0.1:3000, and a client far away sends no Origin: only the proxy's own headers
  // say the request is not local. Without the check in the loopback guard these were served (201).
  it.each([
    ['x-forwarded-for', '203.0.113.7'],
    ['forwarded', 'for=203.0.113.7;proto=https'],
    ['x-real-ip', '203.0.113.7'],
    ['via', '1.1 nginx'],
  ])('answers 403 HERALD_AUTH_REQUIRED to a request carrying %s, and changes nothing', async (header, value) => {
    const s = await testServer({ db });
    try {
      const headers = { host: '127.0.0.1:3000', [header]: value };
      const before = (await s.queue.bulkDryRun('delete', { queue: 'proxied' })).matched;
      const post = await s.app.inject({ method: 'POST', url: '/api/jobs', headers, payload: { kind: 'k', queue: 'proxied' } });
      expect(post.statusCode, post.body).toBe(403);
      expect(post.json()).toEqual({
        statusCode: 403, error: 'Forbidden', code: 'HERALD_AUTH_REQUIRED',
        message: expect.stringMatching(new RegExp(`came through a proxy \\(it carries ${header}\\).*set HERALD_TOKENS`)),
      });
      const pause = await s.app.inject({ method: 'PATCH', url: '/api/queues/proxied', headers, payload: { paused: true } });
      expect(pause.json().code).toBe('HERALD_AUTH_REQUIRED');
      // Reads too: auth off means loopback clients only.
      expect((await s.app.inject({ method: 'GET', url: '/api/jobs?queue=proxied', headers })).statusCode).toBe(403);
      expect((await s.queue.bulkDryRun('delete', { queue: 'proxied' })).matched).toBe(before);
      expect((await s.queue.counts('proxied'))[0]?.paused ?? false).toBe(false);
      // Public routes too (the board, health).
      expect((await s.app.inject({ method: 'GET', url: '/api/health', headers })).json().code).toBe('HERALD_AUTH_REQUIRED');
      // The same request from this machine is served.
      expect((await s.app.inject({ method: 'GET', url: '/api/jobs?queue=proxied', headers: { host: '127.0.0.1:3000' } })).statusCode).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('serves a proxied request once HERALD_TOKENS is set', async () => {
    const s = await testServer({ db, tokens: TOKEN_SPEC });
    try {
      const headers = { 'x-forwarded-for': '203.0.113.7', authorization: `Bearer ${TOKENS.viewer}` };
      expect((await s.app.inject({ method: 'GET', url: '/api/queues', headers })).statusCode).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe('/api/health with auth on', () => {
  it('stays public, but shows session pids, application names and table sizes only to a token', async () => {
    const s = await testServer({ db, tokens: TOKEN_SPEC });
    const writer = new pg.Client({ connectionString: db.url, application_name: 'health-test:secret-app' });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO herald.jobs (kind) VALUES ('held')`);
      await s.queue.enqueue({ kind: 'behind-held' });
      const health = async (headers: Record<string, string> = {}) => (await s.app.inject({ method: 'GET', url: '/api/health', headers })).json();
      const viewer = { authorization: `Bearer ${TOKENS.viewer}` };
      await waitFor(async () => (await health(viewer)).streamHeldBy !== null, { what: '(await health(viewer)).streamHeldBy !== null' });

      const known = await health(viewer);
      expect(known.streamHeldBy).toMatchObject({ pid: expect.any(Number), applicationName: 'health-test:secret-app' });
      expect(known.tables.length).toBeGreaterThan(0);

      for (const headers of [{}, { authorization: 'Bearer wrong' }]) {
        const res = await s.app.inject({ method: 'GET', url: '/api/health', headers });
        expect(res.statusCode).toBe(200);
        const body = res.json();
        expect(body).toMatchObject({ ok: true, db: 'up' });
        expect(body.streamHeldBy).toMatchObject({ pid: null, applicationName: null });
        expect(body.tables).toEqual([]);
        expect(res.body).not.toMatch(/secret-app/);
      }
    } finally {
      await writer.query('ROLLBACK');
      await writer.end();
      await s.close();
    }
  });
});
