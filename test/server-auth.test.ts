// Auth: 401 and 403 at each role boundary of every route (the cases are checked against the routes
// the server registers, so a new route needs one), ?token= only on the stream, public
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
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
interface Case {
  role: Role | 'public';
  url: () => string;
  body?: object;
  /** An SSE stream: opened over HTTP, its status read, then closed (it never ends by itself). */
  stream?: true;
}
/**
 * One case per route the server registers, keyed as its OpenAPI document names it. The test
 * below compares the keys with the server's routes: a route added without a case here fails it.
 */
const CASES: Record<string, Case> = {
  'POST /api/jobs': { role: 'producer', url: () => '/api/jobs', body: { kind: 'k' } },
  'POST /api/jobs/batch': { role: 'producer', url: () => '/api/jobs/batch', body: { jobs: [{ kind: 'k' }] } },
  'POST /api/jobs/bulk': { role: 'admin', url: () => '/api/jobs/bulk', body: { action: 'cancel', filter: { queue: 'nothing-here' } } },
  'GET /api/jobs': { role: 'viewer', url: () => '/api/jobs' },
  'GET /api/jobs/{id}': { role: 'viewer', url: () => `/api/jobs/${jobId}` },
  'GET /api/jobs/{id}/events': { role: 'viewer', url: () => `/api/jobs/${jobId}/events` },
  'GET /api/jobs/{id}/dependencies': { role: 'viewer', url: () => `/api/jobs/${jobId}/dependencies` },
  'GET /api/jobs/{id}/steps': { role: 'viewer', url: () => `/api/jobs/${jobId}/steps` },
  'POST /api/jobs/{id}/signals/{name}': { role: 'producer', url: () => '/api/jobs/123456/signals/approved', body: {} },
  'POST /api/jobs/{id}/cancel': { role: 'admin', url: () => '/api/jobs/123456/cancel' },
  'POST /api/jobs/{id}/retry': { role: 'admin', url: () => '/api/jobs/123456/retry' },
  'POST /api/jobs/{id}/run-now': { role: 'admin', url: () => '/api/jobs/123456/run-now' },
  'GET /api/queues': { role: 'viewer', url: () => '/api/queues' },
  'PATCH /api/queues/{queue}': { role: 'admin', url: () => '/api/queues/q1', body: { paused: true } },
  'GET /api/queues/{queue}/stats': { role: 'viewer', url: () => '/api/queues/q1/stats' },
  'GET /api/workers': { role: 'viewer', url: () => '/api/workers' },
  'GET /api/schedules': { role: 'viewer', url: () => '/api/schedules' },
  'PUT /api/schedules/{name}': { role: 'admin', url: () => '/api/schedules/s1', body: { cron: '0 3 * * *', job: { kind: 'k' } } },
  'POST /api/schedules/{name}/run': { role: 'admin', url: () => '/api/schedules/s1/run' },
  'DELETE /api/schedules/{name}': { role: 'admin', url: () => '/api/schedules/nothing-here' },
  'POST /api/flows': { role: 'producer', url: () => '/api/flows', body: { jobs: [{ ref: 'a', kind: 'k' }] } },
  'GET /api/flows': { role: 'viewer', url: () => '/api/flows' },
  'GET /api/flows/{id}': { role: 'viewer', url: () => '/api/flows/123456' },
  'POST /api/flows/{id}/cancel': { role: 'admin', url: () => '/api/flows/123456/cancel' },
  'POST /api/flows/{id}/retry': { role: 'admin', url: () => '/api/flows/123456/retry' },
  'GET /api/events': { role: 'viewer', url: () => '/api/events', stream: true },
  'GET /api/events/recent': { role: 'viewer', url: () => '/api/events/recent' },
  'GET /api/alerts': { role: 'viewer', url: () => '/api/alerts' },

  'GET /metrics': { role: 'viewer', url: () => '/metrics' },
  'GET /api/health': { role: 'public', url: () => '/api/health' },
};

type Route = Case & { method: Method; key: string };
const routes: Route[] = Object.entries(CASES).map(([key, c]) => ({ ...c, key, method: key.split(' ')[0] as Method }));
const guarded = routes.filter((r): r is Route & { role: Role } => r.role !== 'public');

interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
  json(): { message: string };
}

async function inject(r: Route, headers: Record<string, string>, query = ''): Promise<Answer> {
  if (!r.stream) return s.app.inject({ method: r.method, url: r.url() + query, payload: r.body, headers });
  const ac = new AbortController();
  const res = await fetch(`${s.url}${r.url()}${query}`, { headers, signal: ac.signal });
  const body = res.ok ? '' : await res.text();
  ac.abort();
  return { statusCode: res.status, headers: Object.fromEntries(res.headers), body, json: () => JSON.parse(body) };
}

describe('roles', () => {
  it('has a case for every route the server registers', () => {
    const paths = (s.app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths;
    const registered = Object.entries(paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(Object.keys(CASES).sort()).toEqual(registered.sort());
  });

  it.each(guarded.map((r) => [r.key, r] as const))('%s: 401 without or with an unknown token, 403 below its role', async (_n, route) => {
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
    for (const route of guarded.filter((r) => !r.stream)) {
      expect((await inject(route, {}, `?token=${TOKENS.admin}`)).statusCode, route.key).toBe(401);
    }
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
    const open = routes.filter((r) => r.role === 'public').map((r) => r.url());
    for (const url of [...open, '/api/docs', '/api/openapi.json', '/']) {
      expect((await s.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    }
  });
});

describe('token configuration', () => {
  const A = 'a'.repeat(16);
  const C = 'c'.repeat(16);
  const D = 'd'.repeat(16);

  it('parses role:token and role:label:token entries and rejects malformed ones', () => {
    const t = parseTokens(` viewer:${A} , admin:alice:${C} , producer:ci:${D} `);
    expect(t.size).toBe(3);
    expect(t.actorOf(A)).toEqual({ role: 'viewer' });
    expect(t.actorOf(C)).toEqual({ role: 'admin', label: 'alice' });
    expect(t.actorOf(D)).toEqual({ role: 'producer', label: 'ci' });
    expect(t.actorOf(`alice:${C}`)).toBeUndefined();
    expect(t.actorOf('alice')).toBeUndefined();
    expect(() => parseTokens(`root:${A}`)).toThrow(/role:token or role:label:token with role viewer, producer or admin/);
    expect(() => parseTokens(`admin:bad label:${A}`)).toThrow(/bad label/);
    expect(() => parseTokens('admin:alice:')).toThrow(/no token after its label/);
    expect(() => parseTokens('viewer:')).toThrow(/role:token/);
    expect(() => parseTokens('justatoken')).toThrow(/role:token/);
    expect(() => parseTokens(`viewer:${A},admin:${A}`)).toThrow(/two roles/);
  });

  // The parser used to take the first colon after the role as the end of a label: a token
  // holding a colon was split silently into a label and a shorter token, and a token of two
  // characters was accepted.
  it('refuses an entry with a colon too many, and a token shorter than 16 characters, printing no token', () => {
    for (const [spec, why] of [
      [`producer:ci:${D}:e`, /entry 1 of 1 has more than two colons, which is ambiguous/],
      [`admin:${C}:${D}:x`, /more than two colons/],
      [`viewer:${A},admin:short-secret`, /entry 2 of 2 has a token shorter than 16 characters/],
      ['admin:alice:0123456789abcde', /shorter than 16/],
      ['admin:x', /shorter than 16/],
    ] as const) {
      let message = '';
      try {
        parseTokens(spec);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, spec).toMatch(why);
      expect(message).not.toMatch(/aaaa|cccc|dddd|short-secret|0123456789/);
    }
    expect(parseTokens('admin:0123456789abcdef').actorOf('0123456789abcdef')).toEqual({ role: 'admin' });
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
