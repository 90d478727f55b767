// Security over real HTTP: the role matrix on every route, ?token only on the stream, no stack
// traces in errors, injection strings kept as data, CSP, and loopback-only without tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { spawnHerald, type HeraldProcess } from '../support/herald-process.ts';
import { startServer } from './support.ts';

const TOKENS = { viewer: 'v-secret-0000000001', producer: 'p-secret-0000000001', admin: 'a-secret-0000000001' };
type Role = 'viewer' | 'producer' | 'admin';
const RANK: Record<Role | 'none', number> = { none: 0, viewer: 1, producer: 2, admin: 3 };

let db: TestDatabase;
let server: { proc: HeraldProcess; url: string };
let jobId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startServer({
    DATABASE_URL: db.url,
    HERALD_TOKENS: `viewer:${TOKENS.viewer},producer:${TOKENS.producer},admin:${TOKENS.admin}`,
  });
  jobId = (await db.queue.enqueue({ kind: 'echo' })).job.id;
});
afterAll(async () => {
  await server?.proc.dispose();
  await db?.drop();
});

interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: () => string;
  role: Role | 'none';
  body?: unknown;
  stream?: boolean;
}

const ROUTES: Route[] = [
  { method: 'POST', path: () => '/api/jobs', role: 'producer', body: { kind: 'echo' } },
  { method: 'POST', path: () => '/api/jobs/batch', role: 'producer', body: { jobs: [{ kind: 'echo' }] } },
  { method: 'GET', path: () => '/api/jobs', role: 'viewer' },
  { method: 'GET', path: () => `/api/jobs/${jobId}`, role: 'viewer' },
  { method: 'GET', path: () => `/api/jobs/${jobId}/events`, role: 'viewer' },
  { method: 'POST', path: () => '/api/jobs/999999999/cancel', role: 'admin' },
  { method: 'POST', path: () => '/api/jobs/999999999/retry', role: 'admin' },
  { method: 'POST', path: () => '/api/jobs/bulk', role: 'admin', body: { action: 'retry', filter: { queue: 'nothing-here' }, dryRun: true } },
  { method: 'GET', path: () => '/api/queues', role: 'viewer' },
  { method: 'GET', path: () => '/api/queues/default/stats?range=24h', role: 'viewer' },
  { method: 'GET', path: () => '/api/workers', role: 'viewer' },
  { method: 'PATCH', path: () => '/api/queues/sec-q', role: 'admin', body: { paused: false } },
  { method: 'GET', path: () => '/api/schedules', role: 'viewer' },
  { method: 'PUT', path: () => '/api/schedules/sec-s', role: 'admin', body: { cron: '0 0 1 1 *', job: { kind: 'echo' } } },
  { method: 'POST', path: () => '/api/schedules/sec-s/run', role: 'admin' },
  { method: 'DELETE', path: () => '/api/schedules/sec-none', role: 'admin' },
  { method: 'GET', path: () => '/metrics', role: 'viewer' },
  { method: 'GET', path: () => '/api/events', role: 'viewer', stream: true },
  { method: 'GET', path: () => '/api/health', role: 'none' },
  { method: 'GET', path: () => '/api/openapi.json', role: 'none' },
  { method: 'GET', path: () => '/api/docs', role: 'none' },
  { method: 'GET', path: () => '/', role: 'none' },
];

async function call(route: Route, headers: Record<string, string>, query = ''): Promise<{ status: number; text: string }> {
  const ac = new AbortController();
  const res = await fetch(`${server.url}${route.path()}${query}`, {
    method: route.method,
    headers: { ...(route.body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: route.body ? JSON.stringify(route.body) : undefined,
    signal: ac.signal,
    redirect: 'manual',
  });
  // A stream that was let in stays open: read its status, then hang up.
  if (route.stream && res.ok) {
    ac.abort();
    return { status: res.status, text: '' };
  }
  return { status: res.status, text: await res.text() };
}

describe('security', () => {
  it('enforces the role matrix on every route', async () => {
    const callers: [Role | 'none' | 'unknown', Record<string, string>][] = [
      ['none', {}],
      ['unknown', { authorization: 'Bearer not-a-token' }],
      ['viewer', { authorization: `Bearer ${TOKENS.viewer}` }],
      ['producer', { authorization: `Bearer ${TOKENS.producer}` }],
      ['admin', { authorization: `Bearer ${TOKENS.admin}` }],
    ];
    const failures: string[] = [];
    for (const route of ROUTES) {
      for (const [who, headers] of callers) {
        const { status } = await call(route, headers);
        const label = `${route.method} ${route.path()} as ${who}: ${status}`;
        if (route.role === 'none') {
          if (status === 401 || status === 403 || status >= 500) failures.push(label);
        } else if (who === 'none' || who === 'unknown') {
          if (status !== 401) failures.push(`${label} (want 401)`);
        } else if (RANK[who] < RANK[route.role]) {
          if (status !== 403) failures.push(`${label} (want 403)`);
        } else if (status === 401 || status === 403 || status >= 500) {
          failures.push(`${label} (want allowed)`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('accepts ?token= only on the event stream', async () => {
    const stream = ROUTES.find((r) => r.stream)!;
    expect((await call(stream, {}, `?token=${TOKENS.viewer}`)).status).toBe(200);
    for (const route of ROUTES.filter((r) => !r.stream && r.role !== 'none')) {
      const { status } = await call(route, {}, `?token=${TOKENS.admin}`);
      expect(status, `${route.method} ${route.path()}`).toBe(401);
    }
  });

  it('never puts a stack trace or a file path in an error', async () => {
    const auth = { authorization: `Bearer ${TOKENS.admin}` };
    const bad: [string, RequestInit][] = [
      ['/api/jobs', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"kind":' }],
      ['/api/jobs', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"kind":"x","payload":"\\u0000"}' }],
      ['/api/jobs', { method: 'POST', headers: { ...auth, 'content-type': 'text/plain' }, body: 'hello' }],
      ['/api/jobs/abc', { headers: auth }],
      ['/api/jobs/99999999999999999999999', { headers: auth }],
      ['/api/jobs?limit=-1', { headers: auth }],
      ['/api/events?lastEventId=garbage', { headers: auth }],
      ['/api/nope', { headers: auth }],
    ];
    for (const [p, init] of bad) {
      const res = await fetch(`${server.url}${p}`, init);
      const text = await res.text();
      expect(res.status, `${p} ${text}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${p} ${text}`).toBeLessThan(500);
      expect(text, p).not.toMatch(/\n\s+at |node_modules|\/work\/|\.ts:\d+/);
      const body = JSON.parse(text);
      expect(body).toMatchObject({ statusCode: res.status, error: expect.any(String), message: expect.any(String) });
    }
  });

  it('keeps injection strings as data', async () => {
    const nasty = [
      `'; DROP TABLE herald.jobs; --`,
      `" OR 1=1 --`,
      `<script>alert(1)</script><img src=x onerror=alert(2)>`,
      '${7*7} {{7*7}} %s %n',
      'ﾟ･✿ヾ╲(｡◕‿◕｡)╱✿･ﾟ \u202e RTL',
      `$1 \\x00 \\\\ \\"`,
    ];
    const auth = { authorization: `Bearer ${TOKENS.producer}`, 'content-type': 'application/json' };
    for (const [i, s] of nasty.entries()) {
      const payload = { text: s, [s]: [s] };
      const res = await fetch(`${server.url}/api/jobs`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ kind: 'echo', payload, idempotencyKey: `inj-${i}-${s}`.slice(0, 200) }),
      });
      expect(res.status, s).toBe(201);
      const job = await res.json();
      const back = await (await fetch(`${server.url}/api/jobs/${job.id}`, { headers: auth })).json();
      expect(back.payload).toEqual(payload);
      expect(back.idempotencyKey).toBe(`inj-${i}-${s}`.slice(0, 200));
    }
    const { rows } = await db.pool.query(`SELECT to_regclass('herald.jobs') IS NOT NULL AS ok`);
    expect(rows[0].ok).toBe(true);
  });

  it('sends a Content-Security-Policy with the board', async () => {
    const res = await fetch(`${server.url}/`);
    const csp = res.headers.get('content-security-policy');
    expect(csp).toMatch(/default-src 'self'/);
    expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('listens on loopback by default, and refuses a non-loopback HOST without tokens', async () => {
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
    const open = spawnHerald(['server'], { DATABASE_URL: db.url, HOST: '0.0.0.0', PORT: '0', HERALD_TOKENS: undefined });
    const { code } = await open.exited;
    expect(code).not.toBe(0);
    expect(open.lines.map((l) => String(l.msg ?? '')).join('\n')).toMatch(/HERALD_TOKENS/);
  });
});
