// Search on GET /api/jobs and bulk actions on POST /api/jobs/bulk, through fastify.inject on a
// real database: each filter, paging through the search window, which statuses each action
// touches, the refused filter-less bulk, events deleted with their jobs, and who acted (data.by).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Job } from '../queue/job.ts';
import { testServer, TOKEN_SPEC, TOKENS, type TestServer } from './server-support.ts';
import { rollupAll } from './support/history.ts';

let s: TestServer;
beforeAll(async () => {
  // Labelled tokens (role:label:token) beside the plain ones.
  s = await testServer({ tokens: `${TOKEN_SPEC},admin:alice:alice-token-000001` });
});
afterAll(() => s.close());
beforeEach(async () => {
  await s.db.pool.query('TRUNCATE herald.jobs, herald.job_events, herald.deleted_jobs RESTART IDENTITY');
});

const ALICE = { authorization: 'Bearer alice-token-000001' };
const ADMIN = { authorization: `Bearer ${TOKENS.admin}` };
const VIEWER = { authorization: `Bearer ${TOKENS.viewer}` };

const list = async (query: Record<string, string>) => {
  const res = await s.app.inject({ method: 'GET', url: `/api/jobs?${new URLSearchParams(query)}`, headers: VIEWER });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ jobs: Job[]; next: string | null; searched?: number }>();
};
const ids = async (query: Record<string, string>) => (await list(query)).jobs.map((j) => Number(j.id));
const bulk = (body: unknown, headers = ADMIN) => s.app.inject({ method: 'POST', url: '/api/jobs/bulk', payload: body as object, headers });

/** Puts jobs in the statuses named, in order: ids 1.. in that order. Returns nothing; statuses are checked by the tests. */
async function jobsIn(queue: string, statuses: string[], payload: (i: number) => unknown = (i) => ({ i })) {
  const q = s.queue;
  const made = await q.enqueueMany(statuses.map((_, i) => ({ kind: 'k', queue, payload: payload(i), maxAttempts: 1 })));
  for (const [i, st] of statuses.entries()) {
    const id = made[i].job.id;
    if (st === 'queued') continue;
    if (st === 'cancelled') {
      await q.cancel(id);
      continue;
    }
    // Claim exactly this job: a fresh claim takes the oldest queued, so hold the others back.
    await s.db.pool.query(`UPDATE herald.jobs SET available_at = now() + interval '1 hour' WHERE queue = $1 AND status = 'queued' AND id <> $2`, [queue, id]);
    const [job] = await q.claim({ worker: 'w', queues: [queue], limit: 1 });
    expect(job.id).toBe(id);
    if (st === 'succeeded') await q.complete('w', [{ id, attempt: job.attempt, result: null }]);
    if (st === 'failed') await q.fail('w', [{ id, attempt: job.attempt, error: new Error(`Upstream TIMEOUT 100% for ${i}`) }]);
    await s.db.pool.query(`UPDATE herald.jobs SET available_at = now() WHERE queue = $1 AND status = 'queued'`, [queue]);
  }
  return made.map((m) => m.job.id);
}

const statuses = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const statusOf = async () =>
  Object.fromEntries((await s.db.pool.query('SELECT id::int, status FROM herald.jobs ORDER BY id')).rows.map((r) => [r.id, r.status]));

describe('GET /api/jobs search', () => {
  it('filters by payload containment, given as JSON', async () => {
    await s.queue.enqueueMany([
      { kind: 'k', payload: { user: 42, plan: 'pro', tags: ['a', 'b'] } },
      { kind: 'k', payload: { user: 7 } },
      { kind: 'k', payload: { user: 42 } },
      { kind: 'k', payload: [1, 2] },
    ]);
    expect(await ids({ payload: '{"user":42}' })).toEqual([3, 1]);
    expect(await ids({ payload: '{"user":42,"plan":"pro"}' })).toEqual([1]);
    expect(await ids({ payload: '{"tags":["b"]}' })).toEqual([1]);
    expect(await ids({ payload: '[2]' })).toEqual([4]);
    expect(await ids({ payload: '{"user":"42"}' })).toEqual([]);
  });

  it('filters by group and by tag', async () => {
    await s.queue.enqueueMany([
      { kind: 'k', group: 'acme', tags: ['vip', 'eu'] },
      { kind: 'k', group: 'globex', tags: ['eu'] },
      { kind: 'k', tags: ['vip'] },
      { kind: 'k', group: 'acme' },
    ]);
    expect(await ids({ group: 'acme' })).toEqual([4, 1]);
    expect(await ids({ tag: 'vip' })).toEqual([3, 1]);
    expect(await ids({ tag: 'eu', group: 'globex' })).toEqual([2]);
    expect(await ids({ tag: 'v' })).toEqual([]);
    // Bulk actions take them too.
    expect((await bulk({ action: 'cancel', filter: { status: 'queued', tag: 'vip' } })).json()).toEqual({ matched: 2, affected: 2 });
    expect(await statusOf()).toEqual({ 1: 'cancelled', 2: 'queued', 3: 'cancelled', 4: 'queued' });
    const bad = await s.app.inject({ method: 'GET', url: '/api/jobs?tag=a%20b', headers: VIEWER });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toMatch(/^tag must be 1-128/);
  });

  it('filters by a case-insensitive substring of the last error, % and _ taken literally', async () => {
    await jobsIn('e', ['failed', 'succeeded', 'failed']);
    await s.db.pool.query(`UPDATE herald.jobs SET last_error = '{"message":"disk_full"}' WHERE id = 3`);
    expect(await ids({ error: 'timeout' })).toEqual([1]);
    expect(await ids({ error: 'TIMEOUT 100%' })).toEqual([1]);
    expect(await ids({ error: '100%%' })).toEqual([]);
    expect(await ids({ error: 'k_f' })).toEqual([3]);
    expect(await ids({ error: 'disk%full' })).toEqual([]);
  });

  it('filters by creation time, combined with queue, status and kind', async () => {
    await s.queue.enqueueMany([{ kind: 'a', queue: 'q1' }, { kind: 'b', queue: 'q1' }, { kind: 'a', queue: 'q2' }]);
    await s.db.pool.query(`UPDATE herald.jobs SET created_at = ('2030-01-0' || id || 'T00:00:00Z')::timestamptz`);
    expect(await ids({ createdAfter: '2030-01-02T00:00:00Z' })).toEqual([3, 2]);
    expect(await ids({ createdBefore: '2030-01-02T00:00:00Z' })).toEqual([2, 1]);
    expect(await ids({ createdAfter: '2030-01-01T12:00:00+00:00', createdBefore: '2030-01-02T12:00:00Z' })).toEqual([2]);
    expect(await ids({ createdAfter: '2030-01-01T00:00:00Z', queue: 'q1', kind: 'a' })).toEqual([1]);
    expect(await ids({ createdAfter: '2030-01-01T00:00:00Z', status: 'queued', queue: 'q2' })).toEqual([3]);
    expect(await ids({ createdAfter: '2030-01-01T00:00:00Z', status: 'failed' })).toEqual([]);
  });

  it('status=scheduled lists the queued jobs whose runAt is ahead, as /api/queues counts them; bulk takes it too', async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const made = await s.queue.enqueueMany([
      { kind: 'k', queue: 'sched' },
      { kind: 'k', queue: 'sched', runAt: later },
      { kind: 'k', queue: 'sched', runAt: later },
    ]);
    const [now, ...ahead] = made.map((m) => Number(m.job.id));
    expect(await ids({ queue: 'sched', status: 'scheduled' })).toEqual(ahead.reverse());
    expect(await ids({ queue: 'sched', status: 'queued' })).toContain(now);
    const res = await bulk({ action: 'cancel', filter: { queue: 'sched', status: 'scheduled' }, dryRun: true });
    expect(res.json()).toEqual({ matched: 2, affected: 2 });
  });

  it('pages a search by keyset, and a search window that ends early says so and continues below it', async () => {
    await s.queue.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ kind: 'k', payload: { even: i % 2 === 1 } })));
    // Even ids, newest first, 4 to a page, all pages in one 100k window.
    const p1 = await list({ payload: '{"even":true}', limit: '4' });
    expect(p1.jobs.map((j) => j.id)).toEqual(['30', '28', '26', '24']);
    expect(p1).toEqual({ jobs: expect.any(Array), next: '24' });
    const p2 = await list({ payload: '{"even":true}', limit: '4', before: p1.next! });
    expect(p2.jobs.map((j) => j.id)).toEqual(['22', '20', '18', '16']);

    // A window of 5 jobs (the core's option): pages stop at it, and `next` goes below it.
    const w1 = await s.queue.list({ payload: { even: true }, limit: 4, window: 5 });
    expect(w1.jobs.map((j) => j.id)).toEqual(['30', '28', '26']);
    expect(w1).toMatchObject({ next: '26', searched: 5 });
    const w2 = await s.queue.list({ payload: { even: true }, limit: 4, window: 5, before: w1.next! });
    expect(w2.jobs.map((j) => j.id)).toEqual(['24', '22']);
    expect(w2.next).toBe('21');
    // Walking every page finds every match exactly once; the last page ends the walk.
    const seen: string[] = [];
    let before: string | undefined;
    for (;;) {
      const page = await s.queue.list({ payload: { even: true }, limit: 4, window: 5, before });
      seen.push(...page.jobs.map((j) => j.id));
      if (!page.next) break;
      before = page.next;
    }
    expect(seen).toEqual(Array.from({ length: 15 }, (_, i) => String(30 - 2 * i)));
  });

  it('rejects bad filter values with 400 and a message that says what is wrong', async () => {
    const cases: [string, RegExp][] = [
      ['payload=%7Bnope', /^payload must be JSON/],
      ['payload=', /^payload must be JSON/],
      ['createdAfter=yesterday', /^createdAfter must be an ISO 8601 date-time/],
      ['createdBefore=2030-13-01T00:00:00Z', /^createdBefore must be an ISO 8601 date-time/],
      ['error=', /^error must be 1-1000 characters/],
      ['status=lost', /^status must be one of/],
      ['error=%00', /^error must not contain a NUL character/],
      [`payload=${encodeURIComponent('{"a":"\\u0000"}')}`, /^invalid value/],
      ['colour=red', /colour/],
    ];
    for (const [q, text] of cases) {
      const res = await s.app.inject({ method: 'GET', url: `/api/jobs?${q}`, headers: VIEWER });
      expect(res.statusCode, q).toBe(400);
      expect(res.json().message, q).toMatch(text);
    }
  });
});

describe('POST /api/jobs/bulk', () => {
  it('retry touches failed and cancelled jobs only, and counts the rest as matched', async () => {
    await jobsIn('billing', statuses);
    await jobsIn('other', ['failed']);
    const dry = await bulk({ action: 'retry', filter: { queue: 'billing' }, dryRun: true });
    expect(dry.json()).toEqual({ matched: 5, affected: 2 });
    expect(await statusOf()).toEqual({ 1: 'queued', 2: 'running', 3: 'succeeded', 4: 'failed', 5: 'cancelled', 6: 'failed' });
    const res = await bulk({ action: 'retry', filter: { queue: 'billing' } }, ALICE);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ matched: 5, affected: 2 });
    expect(await statusOf()).toEqual({ 1: 'queued', 2: 'running', 3: 'succeeded', 4: 'queued', 5: 'queued', 6: 'failed' });
    // Who did it is on the retried events, and only there.
    const { rows } = await s.db.pool.query(`SELECT job_id::int, type, data->'by' AS by FROM herald.job_events WHERE data ? 'by' ORDER BY job_id`);
    expect(rows).toEqual([
      { job_id: 4, type: 'retried', by: { role: 'admin', label: 'alice' } },
      { job_id: 5, type: 'retried', by: { role: 'admin', label: 'alice' } },
    ]);
  });

  it('cancel cancels queued jobs, asks running ones to stop, and leaves finished ones', async () => {
    await jobsIn('billing', statuses);
    const res = await bulk({ action: 'cancel', filter: { queue: 'billing' } });
    expect(res.json()).toEqual({ matched: 5, affected: 2 });
    expect(await statusOf()).toEqual({ 1: 'cancelled', 2: 'running', 3: 'succeeded', 4: 'failed', 5: 'cancelled' });
    const running = await s.queue.get('2');
    expect(running?.cancelRequested).toBe(true);
    const { rows } = await s.db.pool.query(`SELECT job_id::int, type, data->'by' AS by FROM herald.job_events WHERE data ? 'by' ORDER BY job_id`);
    expect(rows).toEqual([
      { job_id: 1, type: 'cancelled', by: { role: 'admin' } },
      { job_id: 2, type: 'cancel_requested', by: { role: 'admin' } },
    ]);
  });

  // The delete used to leave every event of the jobs it removed (400 events for 100 jobs): their
  // error and progress messages, which can hold what a job handled, outlived the rows.
  it('delete removes finished jobs and their events, each leaving one deleted event, and nothing else', async () => {
    await jobsIn('billing', statuses);
    await jobsIn('other', ['succeeded']);
    await s.db.pool.query(`UPDATE herald.jobs SET progress = '{"address":"1 Main St"}' WHERE id = 2`);
    const eventsOf = async (ids: number[]) =>
      (await s.db.pool.query(`SELECT job_id::int AS id, type FROM herald.job_events WHERE job_id = ANY($1) ORDER BY tx, id`, [ids])).rows;
    const kept = await eventsOf([1, 2, 6]);
    expect(kept.length).toBeGreaterThan(3);
    const res = await bulk({ action: 'delete', filter: { queue: 'billing' } });
    expect(res.json()).toEqual({ matched: 5, affected: 3 });
    expect(await statusOf()).toEqual({ 1: 'queued', 2: 'running', 6: 'succeeded' });
    // Of the deleted jobs only one 'deleted' event each is left (it has no message), signed.
    const { rows } = await s.db.pool.query(`SELECT job_id::int AS id, type, status, data FROM herald.job_events WHERE job_id IN (3, 4, 5) ORDER BY 1`);
    expect(rows).toEqual([
      { id: 3, type: 'deleted', status: 'succeeded', data: { by: expect.any(Object) } },
      { id: 4, type: 'deleted', status: 'failed', data: { by: expect.any(Object) } },
      { id: 5, type: 'deleted', status: 'cancelled', data: { by: expect.any(Object) } },
    ]);
    expect((await s.db.pool.query(`SELECT count(*)::int AS n FROM herald.job_events WHERE data::text ~ 'TIMEOUT'`)).rows[0].n).toBe(0);
    // The jobs left keep every event.
    expect(await eventsOf([1, 2, 6])).toEqual(kept);
    // Retention removes the 'deleted' events later.
    expect((await s.db.pool.query(`SELECT job_id::int AS id FROM herald.deleted_jobs ORDER BY 1`)).rows.map((r) => r.id)).toEqual([3, 4, 5]);
  });

  it('delete without a token (auth off) removes the events too', async () => {
    await jobsIn('billing', ['succeeded', 'failed']);
    expect(await s.queue.bulk('delete', { queue: 'billing' })).toEqual({ matched: 2, affected: 2 });
    const { rows } = await s.db.pool.query(`SELECT type FROM herald.job_events`);
    expect(rows.map((r) => r.type)).toEqual(['deleted', 'deleted']);
  });

  it('applies every filter, payload as an object or as a JSON string, across batches', async () => {
    await jobsIn('billing', ['failed', 'failed', 'failed', 'cancelled'], (i) => ({ customer: i % 2 ? 42 : 7 }));
    expect((await bulk({ action: 'retry', filter: { status: 'failed', payload: { customer: 42 } }, dryRun: true })).json()).toEqual({ matched: 1, affected: 1 });
    expect((await bulk({ action: 'retry', filter: { queue: 'billing', payload: '{"customer":42}' }, dryRun: true })).json()).toEqual({ matched: 2, affected: 2 });
    expect((await bulk({ action: 'retry', filter: { queue: 'billing', error: 'timeout 100% FOR 2' }, dryRun: true })).json()).toEqual({ matched: 1, affected: 1 });
    // One job per transaction: the keyset loop still reaches every match exactly once.
    const r = await s.queue.bulk('retry', { queue: 'billing', payload: { customer: 7 } }, { batchSize: 1 });
    expect(r).toEqual({ matched: 2, affected: 2 });
    expect(await statusOf()).toEqual({ 1: 'queued', 2: 'failed', 3: 'queued', 4: 'cancelled' });
  });

  it('refuses a filter without queue or status, and bad bodies, writing nothing', async () => {
    await jobsIn('billing', ['failed']);
    const cases: [unknown, RegExp][] = [
      [{ action: 'delete', filter: {} }, /^filter must name a queue, a status or a flow/],
      [{ action: 'retry', filter: { kind: 'k', payload: { a: 1 } } }, /^filter must name a queue, a status or a flow/],
      [{ action: 'explode', filter: { queue: 'billing' } }, /^action must be one of retry, cancel, delete, redrive/],
      [{ action: 'retry' }, /^filter is required/],
      [{ action: 'retry', filter: { queue: 'billing', payload: '{bad' } }, /^payload must be JSON/],
      [{ action: 'retry', filter: { queue: 'billing', createdAfter: 'soon' } }, /createdAfter must be an ISO 8601/],
      [{ action: 'retry', filter: { queue: 'billing', colour: 'red' } }, /colour/],
      [{ action: 'retry', filter: { queue: 'billing' }, dryRun: 'yes' }, /^dryRun must be true or false/],
    ];
    for (const [body, text] of cases) {
      const res = await bulk(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().message, JSON.stringify(body)).toMatch(text);
    }
    expect(await statusOf()).toEqual({ 1: 'failed' });
  });

  it('needs an admin token', async () => {
    expect((await bulk({ action: 'retry', filter: { queue: 'x' } }, VIEWER)).statusCode).toBe(403);
    expect((await bulk({ action: 'retry', filter: { queue: 'x' } }, {} as never)).statusCode).toBe(401);
  });

  it('single cancel and retry record who did them too', async () => {
    await jobsIn('one', ['queued']);
    await s.app.inject({ method: 'POST', url: '/api/jobs/1/cancel', headers: ALICE });
    await s.app.inject({ method: 'POST', url: '/api/jobs/1/retry', headers: ADMIN });
    const { rows } = await s.db.pool.query(`SELECT type, data->'by' AS by FROM herald.job_events WHERE job_id = 1 ORDER BY id`);
    expect(rows).toEqual([
      { type: 'enqueued', by: null },
      { type: 'cancelled', by: { role: 'admin', label: 'alice' } },
      { type: 'retried', by: { role: 'admin' } },
    ]);
  });
});

describe('GET /api/queues/:queue/stats', () => {
  it('serves the rolled-up history in the buckets of each range', async () => {
    await jobsIn('hist', ['succeeded', 'failed', 'queued']);
    await rollupAll(s.queue, s.db.pool);
    for (const [range, n] of [['1h', 60], ['24h', 96], ['7d', 168]] as const) {
      const res = await s.app.inject({ method: 'GET', url: `/api/queues/hist/stats?range=${range}`, headers: VIEWER });
      expect(res.statusCode, res.body).toBe(200);
      const { buckets } = res.json();
      expect(buckets, range).toHaveLength(n);
      const totals = buckets.reduce(
        (t: Record<string, number>, b: Record<string, number>) => ({ enqueued: t.enqueued + b.enqueued, started: t.started + b.started, succeeded: t.succeeded + b.succeeded, failed: t.failed + b.failed }),
        { enqueued: 0, started: 0, succeeded: 0, failed: 0 },
      );
      expect(totals, range).toEqual({ enqueued: 3, started: 2, succeeded: 1, failed: 1 });
      expect(buckets.at(-1).depth, range).toBe(1);
      expect(buckets.at(-1).waitP50Ms, range).toEqual(expect.any(Number));
      expect(Object.keys(buckets[0]).sort()).toEqual(['at', 'depth', 'enqueued', 'failed', 'started', 'succeeded', 'waitP50Ms', 'waitP95Ms']);
    }
    // The default range is 1h; a queue without history has empty buckets.
    const empty = (await s.app.inject({ method: 'GET', url: '/api/queues/none/stats', headers: VIEWER })).json();
    expect(empty.buckets).toHaveLength(60);
    expect(empty.buckets.every((b: { enqueued: number; depth: number | null }) => b.enqueued === 0 && b.depth === null)).toBe(true);
  });

  it('rejects a bad range or queue name with 400', async () => {
    const bad = await s.app.inject({ method: 'GET', url: '/api/queues/hist/stats?range=2h', headers: VIEWER });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toMatch(/^range must be one of 1h, 24h, 7d/);
    const name = await s.app.inject({ method: 'GET', url: '/api/queues/a%20b/stats', headers: VIEWER });
    expect(name.statusCode).toBe(400);
    expect(name.json().message).toMatch(/queue must be 1-128/);
  });
});
