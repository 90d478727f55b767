// Security headers: worked out once at start (server/security-headers.ts), and exactly these on
// every reply: success, validation error, auth refusal, loopback guard, not found, the board,
// the API docs and the event stream. The values are the ones @fastify/helmet sent when it
// re-ran helmet on every request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN_SPEC, TOKENS, testServer, type TestServer } from './server-support.ts';
import { useTestDatabase } from './support/db.ts';
import { helmetHeaders } from '../server/security-headers.ts';

const EXPECTED: Record<string, string> = {
  'content-security-policy':
    "default-src 'self';script-src 'self';style-src 'self' 'unsafe-inline';img-src 'self' data:;font-src 'self' data:;connect-src 'self';object-src 'none';base-uri 'self';form-action 'self';frame-ancestors 'none'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};
const NAMES = [...Object.keys(EXPECTED), 'strict-transport-security', 'x-powered-by', 'access-control-allow-origin'];

/** The reply's headers among those helmet may set (and those it must not). */
const security = (headers: Record<string, unknown> | Headers) =>
  Object.fromEntries(
    NAMES.map((n) => [n, headers instanceof Headers ? headers.get(n) : headers[n]] as const).filter(([, v]) => v !== undefined && v !== null),
  );

const db = useTestDatabase();
let open: TestServer;
let authed: TestServer;

beforeAll(async () => {
  open = await testServer({ db, listen: true });
  authed = await testServer({ db, tokens: TOKEN_SPEC });
});
afterAll(async () => {
  await open.close();
  await authed.close();
});

describe('security headers', () => {
  it('helmet works out the same headers as before, once', () => {
    expect(helmetHeaders({ contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'self'"] } }, hsts: false })).toMatchObject({
      'content-security-policy': "default-src 'self'",
      'x-content-type-options': 'nosniff',
    });
  });

  it('are the same on every kind of reply', async () => {
    const replies = {
      health: await open.app.inject({ method: 'GET', url: '/api/health' }),
      created: await open.app.inject({ method: 'POST', url: '/api/jobs', payload: { kind: 'k' } }),
      invalid: await open.app.inject({ method: 'POST', url: '/api/jobs', payload: { kind: '' } }),
      notFound: await open.app.inject({ method: 'GET', url: '/nope' }),
      misdirected: await open.app.inject({ method: 'GET', url: '/api/health', headers: { host: 'example.com' } }),
      crossSite: await open.app.inject({ method: 'POST', url: '/api/jobs', payload: { kind: 'k' }, headers: { origin: 'https://example.com' } }),
      board: await open.app.inject({ method: 'GET', url: '/' }),
      docs: await open.app.inject({ method: 'GET', url: '/api/docs/' }),
      unauthorized: await authed.app.inject({ method: 'POST', url: '/api/jobs', payload: { kind: 'k' } }),
      forbidden: await authed.app.inject({ method: 'POST', url: '/api/jobs', payload: { kind: 'k' }, headers: { authorization: `Bearer ${TOKENS.viewer}` } }),
    };
    expect(Object.fromEntries(Object.entries(replies).map(([k, r]) => [k, r.statusCode]))).toEqual({
      health: 200, created: 201, invalid: 400, notFound: 404, misdirected: 421, crossSite: 403, board: 200, docs: 200, unauthorized: 401, forbidden: 403,
    });
    for (const [name, r] of Object.entries(replies)) expect(security(r.headers), name).toEqual(EXPECTED);
  });

  it('the event stream has them too', async () => {
    const ac = new AbortController();
    const res = await fetch(`${open.url}/api/events`, { headers: { accept: 'text/event-stream' }, signal: ac.signal });
    try {
      expect(res.status).toBe(200);
      expect(security(res.headers)).toEqual(EXPECTED);
    } finally {
      ac.abort();
    }
  });
});
