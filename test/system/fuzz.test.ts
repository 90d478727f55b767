// Bad input: 10,000 generated requests (fast-check) across every route (read from the server's
// OpenAPI document, so a new route is in without a change here), method, header, query
// string and body shape. Every answer is a success or a 4xx, never a 5xx or a hang, and the
// database ends up holding exactly what the accepted requests wrote.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import type { HeraldProcess } from '../support/herald-process.ts';
import { startServer } from './support.ts';
import { writeReport } from './report.ts';

const RUNS = 10_000;
const TOKENS = { viewer: 'fz-viewer-00000001', producer: 'fz-producer-000001', admin: 'fz-admin-000000001' };

let db: TestDatabase;
let server: { proc: HeraldProcess; url: string };

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startServer({
    DATABASE_URL: db.url,
    HERALD_TOKENS: `viewer:${TOKENS.viewer},producer:${TOKENS.producer},admin:${TOKENS.admin}`,
  });
});
afterAll(async () => {
  await server?.proc.dispose();
  await db?.drop();
});

// Strings that tend to break things, mixed with arbitrary ones.
const nasty = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('', ' ', '0', '-1', '1e309', 'NaN', 'null', 'true', '[]', '{}', '\u0000', '%00', '../../etc/passwd',
    `'; DROP TABLE herald.jobs; --`, '<script>x</script>', '9'.repeat(30), 'a'.repeat(129), '1.2', '18446744073709551616.1'),
);
const smallInt = fc.oneof(fc.integer({ min: -40_000, max: 40_000 }), fc.constantFrom(0, 1, 1000, 1001, 32767, 32768, -32768, -32769));
const name = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_.:-]{1,12}$/), nasty);

const jobBody = fc.record(
  {
    kind: fc.oneof(fc.constantFrom('echo', 'sleep', 'fail'), name, fc.integer(), fc.constant(null)),
    queue: fc.oneof(fc.constantFrom('default', 'fuzz'), name, fc.integer()),
    payload: fc.oneof(fc.jsonValue({ maxDepth: 3 }), nasty),
    priority: fc.oneof(smallInt, fc.double(), nasty),
    runAt: fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), nasty, fc.integer()),
    maxAttempts: fc.oneof(smallInt, nasty),
    requires: fc.oneof(fc.array(name, { maxLength: 40 }), nasty),
    idempotencyKey: fc.oneof(fc.stringMatching(/^k[0-9]{1,2}$/), nasty, fc.constant(null)),
    extra: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: [] },
);

const body = fc.oneof(
  { weight: 5, arbitrary: jobBody.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: fc.array(jobBody, { maxLength: 5 }).map((jobs) => JSON.stringify({ jobs })) },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: nasty },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

const idPart = fc.oneof(fc.constant('@existing'), fc.bigInt({ min: 0n, max: 10n ** 20n }).map(String), nasty.map(encodeURIComponent));
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;
/** Paths the OpenAPI document does not list: the document itself, the docs, the board, none at all. */
const UNDOCUMENTED = ['/api/openapi.json', '/api/docs', '/', '/api/nope'];

interface Operation {
  method: string;
  template: string;
}

/**
 * Every route the server documents, each with its own method mostly and any other sometimes;
 * path parameters filled with ids (some existing) or names, well-formed or not.
 */
function routeOf(ops: Operation[]) {
  const fill = (template: string) =>
    fc
      .tuple(...[...template.matchAll(/\{(\w+)\}/g)].map((m) => (m[1] === 'id' ? idPart : name.map(encodeURIComponent))))
      .map((values) => values.reduce<string>((p, v) => p.replace(/\{\w+\}/, v), template));
  const documented = fc.constantFrom(...ops).chain((op) =>
    fc.record({
      template: fc.constant(op.template),
      path: op.template.includes('{') ? fill(op.template) : fc.constant(op.template),
      method: fc.oneof({ weight: 3, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
    }),
  );
  const other = fc.record({ template: fc.constantFrom(...UNDOCUMENTED), method: fc.constantFrom(...METHODS) }).map((r) => ({ ...r, path: r.template }));
  return fc.oneof({ weight: 9, arbitrary: documented }, { weight: 1, arbitrary: other });
}
const query = fc.array(
  fc.tuple(
    fc.constantFrom('queue', 'status', 'kind', 'limit', 'before', 'wait', 'lastEventId', 'job', 'token', 'x', 'payload', 'error', 'createdAfter', 'createdBefore', 'group', 'tag', 'range'),
    fc.oneof(nasty, fc.integer({ min: -5, max: 70_000 }).map(String), fc.constantFrom('queued', 'failed', '0', '25', '500', '501')),
  ),
  { maxLength: 4 },
);
const randomRequest = (ops: Operation[]) => fc.record({
  route: routeOf(ops),
  query,
  body,
  token: fc.constantFrom(undefined, TOKENS.viewer, TOKENS.producer, TOKENS.admin, TOKENS.admin, 'bogus', ''),
  contentType: fc.constantFrom('application/json', 'application/json', 'text/plain', 'application/x-www-form-urlencoded', undefined),
  idempotencyKey: fc.option(fc.oneof(fc.stringMatching(/^k[0-9]{1,2}$/), nasty.filter((s) => /^[\x20-\x7e]*$/.test(s)))),
  lastEventId: fc.option(nasty.filter((s) => /^[\x20-\x7e]*$/.test(s))),
});

// Well-formed writes, so that the fuzzer also exercises what gets accepted (and must be stored).
const validJob = fc.record(
  {
    kind: fc.constantFrom('echo', 'sleep', 'fail'),
    queue: fc.stringMatching(/^[a-z]{1,6}$/),
    payload: fc.jsonValue({ maxDepth: 2 }).filter((v) => !JSON.stringify(v).includes('\\u0000')),
    priority: fc.integer({ min: -32768, max: 32767 }),
    maxAttempts: fc.integer({ min: 1, max: 1000 }),
    requires: fc.array(fc.stringMatching(/^[a-z]{1,5}$/), { maxLength: 3 }),
    idempotencyKey: fc.stringMatching(/^k[0-9]{1,2}$/),
  },
  { requiredKeys: ['kind'] },
);
const writer = { token: fc.constantFrom(TOKENS.producer, TOKENS.admin), contentType: fc.constant('application/json'), query: fc.constant([]), idempotencyKey: fc.constant(null), lastEventId: fc.constant(null) };
const post = (template: string, path = template) => fc.constant({ method: 'POST', template, path });
const validRequest = fc.oneof(
  { weight: 3, arbitrary: fc.record({ route: post('/api/jobs'), body: validJob.map((j) => JSON.stringify(j)), ...writer }) },
  { weight: 1, arbitrary: fc.record({ route: post('/api/jobs/batch'), body: fc.array(validJob, { minLength: 1, maxLength: 5 }).map((jobs) => JSON.stringify({ jobs })), ...writer }) },
  {
    weight: 2,
    arbitrary: fc.record({
      route: fc.constantFrom('cancel', 'retry').chain((a) => post(`/api/jobs/{id}/${a}`, `/api/jobs/@existing/${a}`)),
      body: fc.constant(undefined), ...writer, token: fc.constant(TOKENS.admin),
    }),
  },
);
// Well-formed calls of the settings, schedule and flow routes, so their handlers run too.
const scheduleName = fc.constantFrom('s1', 's2', 's3');
const admin = { ...writer, token: fc.constant(TOKENS.admin) };
const validAdmin = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      route: fc.stringMatching(/^[a-z]{1,6}$/).map((q) => ({ method: 'PATCH', template: '/api/queues/{queue}', path: `/api/queues/${q}` })),
      body: fc.record({ paused: fc.boolean(), concurrency: fc.option(fc.integer({ min: 1, max: 100 })) }, { requiredKeys: [] }).map((b) => JSON.stringify(b)),
      ...admin,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      route: scheduleName.map((n) => ({ method: 'PUT', template: '/api/schedules/{name}', path: `/api/schedules/${n}` })),
      body: fc.record({ cron: fc.constantFrom('*/5 * * * *', '0 3 * * *'), job: validJob }).map((b) => JSON.stringify(b)),
      ...admin,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      route: fc.tuple(scheduleName, fc.constantFrom('POST', 'DELETE')).map(([n, method]) =>
        method === 'POST'
          ? { method, template: '/api/schedules/{name}/run', path: `/api/schedules/${n}/run` }
          : { method, template: '/api/schedules/{name}', path: `/api/schedules/${n}` }),
      body: fc.constant(undefined),
      ...admin,
    }),
  },
  {
    weight: 1,
    // A dry run: the statuses this test keeps track of stay as they are.
    arbitrary: fc.record({
      route: post('/api/jobs/bulk'),
      body: fc.record({ action: fc.constantFrom('cancel', 'retry', 'delete'), filter: fc.record({ queue: fc.stringMatching(/^[a-z]{1,6}$/) }), dryRun: fc.constant(true) })
        .map((b) => JSON.stringify(b)),
      ...admin,
    }),
  },
  {
    weight: 1,
    // '@scheduled': a job the test enqueues an hour ahead first; the first run now of it is a 200.
    arbitrary: fc.record({ route: post('/api/jobs/{id}/run-now', '/api/jobs/@scheduled/run-now'), body: fc.constant(undefined), ...admin }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      route: fc.stringMatching(/^[a-z]{1,8}$/).map((n) => ({ method: 'POST', template: '/api/jobs/{id}/signals/{name}', path: `/api/jobs/@existing/signals/${n}` })),
      body: fc.jsonValue({ maxDepth: 2 }).map((payload) => JSON.stringify({ payload })),
      ...writer,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      route: post('/api/flows'),
      body: fc.array(validJob, { minLength: 1, maxLength: 3 }).map((jobs) => JSON.stringify({ jobs: jobs.map((j, i) => ({ ...j, idempotencyKey: undefined, ref: `r${i}` })) })),
      ...writer,
    }),
  },
);
const requestOf = (ops: Operation[]) =>
  fc.oneof({ weight: 7, arbitrary: randomRequest(ops) }, { weight: 3, arbitrary: validRequest }, { weight: 1, arbitrary: validAdmin });

describe('fuzz', () => {
  it(`answers ${RUNS} malformed requests with success or 4xx, and writes only what it accepted`, async () => {
    // The routes come from the server's own document: a route added to it is fuzzed too.
    const doc = (await (await fetch(`${server.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const ops = Object.entries(doc.paths).flatMap(([template, byMethod]) => Object.keys(byMethod).map((m) => ({ method: m.toUpperCase(), template })));
    const requests = fc.sample(requestOf(ops), { numRuns: RUNS, seed: 20261129 });
    const sent = new Set<string>();
    /** After an accepted action on a flow: its jobs are now as the server lists them. */
    const expectFlow = async (flowId: string) => {
      const res = await fetch(`${server.url}/api/flows/${flowId}`, { headers: { authorization: `Bearer ${TOKENS.admin}` } });
      expect(res.status).toBe(200);
      for (const job of ((await res.json()) as { jobs: { id: string; status: string }[] }).jobs) expectedStatus.set(job.id, job.status);
    };
    const created = new Set<string>();
    const flows = new Set<string>();
    /** Documented operations (method and template) that answered 2xx at least once. */
    const succeeded = new Set<string>();
    const expectedStatus = new Map<string, string>();
    const serverErrors: string[] = [];
    const byClass: Record<string, number> = {};
    const ahead = await fetch(`${server.url}/api/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'echo', queue: 'later', runAt: new Date(Date.now() + 3_600_000).toISOString() }),
    });
    // Not among the '@existing' jobs (their cancels would leave nothing to run now); counted after the run.
    const scheduled = (await ahead.json()) as { id: string; status: string };
    expectedStatus.set(scheduled.id, scheduled.status);

    for (const r of requests) {
      // '@existing' is a job that exists, or under /api/flows a flow that exists (a job id there
      // would mostly be a 404, and the flow handlers would hardly run).
      const known = r.route.template.startsWith('/api/flows/') ? [...flows] : [...created];
      sent.add(`${r.route.method} ${r.route.template}`);
      const p = r.route.path.replace('@existing', known.length ? known[(known.length * 7919) % known.length] : '1').replace('@scheduled', scheduled.id);
      // ?wait holds the reply while no worker runs: keep accepted waits short, as a client would.
      const qs = r.query.map(([k, v]) => [k, k === 'wait' && /^\d+$/.test(v) && Number(v) <= 60_000 ? String(Number(v) % 50) : v]);
      const url = `${server.url}${p}${qs.length ? `?${new URLSearchParams(qs)}` : ''}`;
      const headers: Record<string, string> = {};
      if (r.token !== undefined) headers.authorization = `Bearer ${r.token}`;
      if (r.contentType && r.body !== undefined) headers['content-type'] = r.contentType;
      if (r.idempotencyKey) headers['idempotency-key'] = r.idempotencyKey;
      if (r.lastEventId) headers['last-event-id'] = r.lastEventId;
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), 70_000);
      let status: number;
      let json: unknown = null;
      try {
        const res = await fetch(url, {
          method: r.route.method,
          headers,
          body: r.route.method === 'GET' ? undefined : r.body,
          signal: ac.signal,
          redirect: 'manual',
        });
        status = res.status;
        if (res.headers.get('content-type')?.includes('text/event-stream')) ac.abort();
        else json = await res.json().catch(() => null);
      } catch (err) {
        serverErrors.push(`${r.route.method} ${url}: ${(err as Error).message}`);
        continue;
      } finally {
        clearTimeout(timer);
      }
      byClass[`${Math.floor(status / 100)}xx`] = (byClass[`${Math.floor(status / 100)}xx`] ?? 0) + 1;
      if (status < 300) succeeded.add(`${r.route.method} ${r.route.template}`);
      if (status >= 500) serverErrors.push(`${r.route.method} ${url} ${r.body?.slice(0, 200)} → ${status} ${JSON.stringify(json)}`);
      if (r.route.method !== 'POST' || status >= 300) continue;
      // Book-keeping of what an accepted write did.
      const j = json as { id?: string; status?: string; flowId?: string | null; flow?: { id: string }; jobs?: { id: string; status: string }[] };
      if (j?.flow?.id) flows.add(j.flow.id);
      if (/^\/api\/jobs\/?$/.test(p.split('?')[0]) && j.id) {
        if (status === 201) created.add(j.id);
        expectedStatus.set(j.id, j.status!);
      } else if ((p.startsWith('/api/jobs/batch') || /^\/api\/flows\/?$/.test(p.split('?')[0])) && j.jobs) {
        for (const job of j.jobs) {
          created.add(job.id);
          expectedStatus.set(job.id, job.status);
        }
      } else if (/^\/api\/jobs\/[^/]+\/(cancel|retry)$/.test(p) && j.id) {
        expectedStatus.set(j.id, j.status!);
        // In a flow, a cancel reaches the job's children and a retry blocks them again.
        if (j.flowId) await expectFlow(j.flowId);
      } else if (/^\/api\/flows\/[^/]+\/(cancel|retry)$/.test(p)) {
        await expectFlow(p.split('/')[3]);
      } else if (/^\/api\/schedules\/[^/]+\/run$/.test(p) && j.id) {
        created.add(j.id);
        expectedStatus.set(j.id, j.status!);
      }
    }

    created.add(scheduled.id);
    const { rows } = await db.pool.query(`SELECT id::text, status FROM herald.jobs ORDER BY id`);
    writeReport('fuzz', { requests: RUNS, responses: byClass, serverErrors: serverErrors.length, jobsCreated: created.size });
    expect(serverErrors).toEqual([]);
    expect(ops.filter((op) => !sent.has(`${op.method} ${op.template}`)), 'documented routes never requested').toEqual([]);
    // Each handler ran through at least once, not only its validation (without the well-formed
    // bulk, signal and run-now requests above, those routes never did).
    expect(ops.filter((op) => !succeeded.has(`${op.method} ${op.template}`)).map((op) => `${op.method} ${op.template}`), 'documented routes that never answered 2xx').toEqual([]);
    expect(ops.length).toBeGreaterThan(20);
    expect(rows.map((r) => r.id).sort()).toEqual([...created].sort());
    for (const row of rows) expect(row.status, `job ${row.id}`).toBe(expectedStatus.get(row.id));
    expect(byClass['2xx']).toBeGreaterThan(100);
    expect(byClass['4xx']).toBeGreaterThan(1000);
  });
});
