// Auth: 401 and 403 at each role boundary of every route, ?token= only on the stream, public
// routes stay public, and the loopback rule when no tokens are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopback, parseTokens } from '../server/auth.ts';
import { startServer } from '../server/index.ts';
import { TOKEN_SPEC, TOKENS, testServer, type TestServer } from './server-support.ts';

let s: TestServer;
let jobId: string;
beforeAll(async () => {
  s = await testServer({ tokens: TOKEN_SPEC, listen: true });
  jobId = (await s.queue.enqueue({ kind: 'k' })).job.id;
});
afterAll(() => s.close());

type Role = 'viewer' | 'producer' | 'admin';
const RANK = { viewer: 1, producer: 2, admin: 3 };
const routes: { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; url: () => string; role: Role; body?: object }[] = [
  { method: 'POST', url: () => '/api/jobs', role: 'producer', body: { kind: 'k' } },
  { method: 'POST', url: () => '/api/jobs/batch', role: 'producer', body: { jobs: [{ kind: 'k' }] } },
  { method: 'GET', url: () => '/api/jobs', role: 'viewer' },
  { method: 'GET', url: () => `/api/jobs/${jobId}`, role: 'viewer' },
  { method: 'GET', url: () => `/api/jobs/${jobId}/events`, role: 'viewer' },
  { method: 'POST', url: () => '/api/jobs/123456/cancel', role: 'admin' },
  { method: 'POST', url: () => '/api/jobs/123456/retry', role: 'admin' },
  { method: 'GET', url: () => '/api/queues', role: 'viewer' },
  { method: 'GET', url: () => '/api/workers', role: 'viewer' },
  { method: 'PATCH', url: () => '/api/queues/q1', role: 'admin', body: { paused: true } },
  { method: 'GET', url: () => '/metrics', role: 'viewer' },
];

const inject = (r: (typeof routes)[number], headers: Record<string, string>, query = '') =>
  s.app.inject({ method: r.method, url: r.url() + query, payload: r.body, headers });

describe('roles', () => {
  it.each(routes.map((r) => [`${r.method} ${r.url()}`, r] as const))('%s: 401 without or with an unknown token, 403 below its role', async (_n, route) => {
    const none = await inject(route, {});
    expect(none.statusCode).toBe(401);
    expect(none.json().message).toMatch(/needs a token: send Authorization: Bearer TOKEN/);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    const unknown = await inject(route, { authorization: 'Bearer nope' });
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json().message).toMatch(/unknown token/);
    expect((await inject(route, { authorization: `Basic ${TOKENS.admin}` })).statusCode).toBe(401);
    for (const role of ['viewer', 'producer', 'admin'] as const) {
      const res = await inject(route, { authorization: `Bearer ${TOKENS[role]}` });
      if (RANK[role] < RANK[route.role]) {
        expect(res.statusCode, role).toBe(403);
        expect(res.json().message).toMatch(new RegExp(`a ${role} token cannot ${route.method} .* it needs ${route.role}`));
      } else {
        expect([200, 201, 404], `${role}: ${res.body}`).toContain(res.statusCode);
      }
    }
  });

  it('ignores ?token= on every route but the stream', async () => {
    for (const route of routes) expect((await inject(route, {}, `?token=${TOKENS.admin}`)).statusCode).toBe(401);
  });

  it('accepts ?token= and the header on the stream, and checks them', async () => {
    const open = async (query: string, headers: Record<string, string> = {}) => {
      const ac = new AbortController();
      const res = await fetch(`${s.url}/api/events${query}`, { headers, signal: ac.signal });
      ac.abort();
      return res.status;
    };
    expect(await open(`?token=${TOKENS.viewer}`)).toBe(200);
    expect(await open('', { authorization: `Bearer ${TOKENS.viewer}` })).toBe(200);
    expect(await open('')).toBe(401);
    expect(await open('?token=wrong')).toBe(401);
  });

  it('keeps health, docs, the OpenAPI document and the board public', async () => {
    for (const url of ['/api/health', '/api/docs', '/api/openapi.json', '/']) {
      expect((await s.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    }
  });
});

describe('token configuration', () => {
  it('parses role:token and role:label:token entries and rejects malformed ones', () => {
    const t = parseTokens(' viewer:a , admin:alice:c , producer:ci:d:e ');
    expect(t.size).toBe(3);
    expect(t.actorOf('a')).toEqual({ role: 'viewer' });
    expect(t.actorOf('c')).toEqual({ role: 'admin', label: 'alice' });
    // The label ends at the first colon after the role; the token may hold more.
    expect(t.actorOf('d:e')).toEqual({ role: 'producer', label: 'ci' });
    expect(t.actorOf('alice:c')).toBeUndefined();
    expect(t.actorOf('alice')).toBeUndefined();
    expect(() => parseTokens('root:x')).toThrow(/role:token or role:label:token with role viewer, producer or admin/);
    expect(() => parseTokens('admin:bad label:x')).toThrow(/bad label/);
    expect(() => parseTokens('admin:alice:')).toThrow(/no token after it/);
    expect(() => parseTokens('viewer:')).toThrow(/role:token/);
    expect(() => parseTokens('justatoken')).toThrow(/role:token/);
    expect(() => parseTokens('viewer:x,admin:x')).toThrow(/two roles/);
  });

  it('knows loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) expect(isLoopback(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '192.168.1.5', 'example.com']) expect(isLoopback(h), h).toBe(false);
  });

  it('refuses a non-loopback HOST without tokens, and allows it with them', async () => {
    await expect(startServer({ databaseUrl: s.db.url, host: '0.0.0.0', port: 0 })).rejects.toThrow(/HOST=0\.0\.0\.0 .*HERALD_TOKENS is unset/);
    const open = await startServer({ databaseUrl: s.db.url, host: '0.0.0.0', port: 0, tokens: TOKEN_SPEC });
    expect(open.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    await open.stop();
  });

  it('needs no token at all when none are set', async () => {
    const open = await testServer({ db: s.db });
    expect((await open.app.inject({ method: 'POST', url: '/api/jobs/1/retry' })).statusCode).not.toBe(401);
    expect((await open.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
    await open.close();
  });
});
