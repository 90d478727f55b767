// Run now over HTTP: POST /api/jobs/:id/run-now and the bulk action run_now make a queued job that
// waits out its backoff or its runAt due at once, with a `promoted` event signed by the caller
// (on the job's timeline and on the stream). Every other job is a 409 that changes nothing.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HeraldClient } from '../client/index.ts';
import { Queue } from '../queue/queue.ts';
import { openStream, testServer, TOKEN_SPEC, TOKENS, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
/** Fails attempts with an hour's backoff: the retry cannot come due while a test runs. */
let slowBackoff: Queue;
beforeAll(async () => {
  s = await testServer({ listen: true, tokens: `${TOKEN_SPEC},admin:alice:alice-token-000001` });
  slowBackoff = new Queue(s.db.pool, { backoffBaseMs: 3_600_000, backoffMaxMs: 7_200_000 });
});
afterAll(() => s.close());
beforeEach(async () => {
  await s.db.pool.query('TRUNCATE herald.jobs, herald.job_events RESTART IDENTITY');
});

const ALICE = { authorization: 'Bearer alice-token-000001' };
const ADMIN = { authorization: `Bearer ${TOKENS.admin}` };
const W = 'w:1:runnow';
const HOUR_AHEAD = () => new Date(Date.now() + 3_600_000).toISOString();

const post = (url: string, headers: Record<string, string>, payload?: object) =>
  s.app.inject({ method: 'POST', url, headers, ...(payload ? { payload } : {}) });
const runNow = (id: string, headers = ALICE) => post(`/api/jobs/${id}/run-now`, headers);
const enqueue = async (body: object) => (await post('/api/jobs', ADMIN, body)).json<{ id: string; runAt: string }>();

/** The job's row and its events as stored: what a refused run now must leave exactly as it was. */
async function stored(id: string) {
  const job = (await s.db.pool.query('SELECT * FROM herald.jobs WHERE id = $1', [id])).rows[0];
  const events = (await s.db.pool.query('SELECT id, type::text, data FROM herald.job_events WHERE job_id = $1 ORDER BY id', [id])).rows;
  return { job, events };
}

const types = async (id: string) => (await stored(id)).events.map((e) => e.type);

describe('POST /api/jobs/:id/run-now', () => {
  it('a job scheduled for later runs now: a promoted event signed with the caller, and a worker claims it at once', async () => {
    const job = await enqueue({ kind: 'report', queue: 'runnow', runAt: HOUR_AHEAD() });
    expect(await s.queue.claim({ worker: W, queues: ['runnow'], limit: 1 })).toEqual([]);

    const res = await runNow(job.id);
    expect(res.statusCode, res.body).toBe(200);
    const after = res.json();
    expect(after).toMatchObject({ id: job.id, status: 'queued', attempt: 0, waitingFor: 'no_worker' });
    expect(Date.parse(after.runAt)).toBeLessThan(Date.parse(job.runAt));

    const { events } = await stored(job.id);
    expect(events.map((e) => e.type)).toEqual(['enqueued', 'promoted']);
    expect(events[1].data).toEqual({ scheduledFor: job.runAt, by: { role: 'admin', label: 'alice' } });
    // The API's timeline shows the same event.
    const timeline = (await s.app.inject({ method: 'GET', url: `/api/jobs/${job.id}/events`, headers: ADMIN })).json().events;
    expect(timeline.at(-1)).toMatchObject({ type: 'promoted', status: 'queued', data: { by: { label: 'alice' } } });

    const [claimed] = await s.queue.claim({ worker: W, queues: ['runnow'], limit: 1 });
    expect(claimed).toMatchObject({ id: job.id, attempt: 1 });
  });

  // Mutation caught: client.runNow posting to /api/jobs/:id/retry (the scheduled job's 409).
  it('the client runs a job now, and a job that is not waiting is its 409 with the code', async () => {
    const client = new HeraldClient({ baseUrl: s.url, token: 'alice-token-000001' });
    const job = await enqueue({ kind: 'report', queue: 'runnow', runAt: HOUR_AHEAD() });
    expect(await client.runNow(job.id)).toMatchObject({ id: job.id, status: 'queued' });
    expect(await types(job.id)).toEqual(['enqueued', 'promoted']);
    await expect(client.runNow(job.id)).rejects.toMatchObject({ name: 'HeraldApiError', statusCode: 409, code: 'HERALD_JOB_NOT_SCHEDULED' });
    expect(await types(job.id)).toEqual(['enqueued', 'promoted']);
  });

  it('a job waiting out its backoff runs now, its attempts as they were', async () => {
    const job = await enqueue({ kind: 'charge', queue: 'runnow', maxAttempts: 3 });
    const [c] = await s.queue.claim({ worker: W, queues: ['runnow'], limit: 1 });
    await slowBackoff.fail(W, [{ ...c, error: new Error('smtp 503') }]);
    const res = await runNow(job.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'queued', attempt: 1, maxAttempts: 3, lastError: { message: 'smtp 503' } });
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'retry_scheduled', 'promoted']);
    const [again] = await s.queue.claim({ worker: W, queues: ['runnow'], limit: 1 });
    expect(again).toMatchObject({ id: job.id, attempt: 2 });
  });

  it('refuses, with 409 and the rule, every job that is not waiting out a backoff or a runAt, and changes nothing', async () => {
    const due = await enqueue({ kind: 'k', queue: 'runnow' });
    const later = await enqueue({ kind: 'k', queue: 'other', runAt: HOUR_AHEAD() });
    const running = await enqueue({ kind: 'k', queue: 'runnow' });
    // `due` is claimed first (same priority, older), so `running` needs a second claim: run `due` to the end.
    const [c1] = await s.queue.claim({ worker: W, queues: ['runnow'], limit: 1 });
    await s.queue.complete(W, [{ ...c1, result: null }]);
    await s.queue.claim({ worker: W, queues: ['runnow'], limit: 1 });
    const queuedDue = await enqueue({ kind: 'k', queue: 'runnow' });
    // A durable handler's sleep: queued, its runAt ahead, jobs.wait says why.
    await s.db.pool.query(`UPDATE herald.jobs SET wait = jsonb_build_object('type', 'sleep', 'until', $2::text) WHERE id = $1`, [later.id, HOUR_AHEAD()]);
    const blocked = (await post('/api/jobs', ADMIN, { kind: 'k', queue: 'runnow', dependsOn: [running.id] })).json();

    const cases: [string, RegExp][] = [
      [queuedDue.id, /^job \d+ is due already; run now applies to a queued job waiting out its backoff or its runAt$/],
      [due.id, /^job \d+ is succeeded; run now applies/],
      [running.id, /^job \d+ is running; run now applies/],
      [blocked.id, /^job \d+ is blocked; run now applies/],
      [later.id, /^job \d+ is a durable handler's sleep until .*, which ends on its own; run now applies/],
    ];
    for (const [id, message] of cases) {
      const before = await stored(id);
      const res = await runNow(id);
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json()).toEqual({ statusCode: 409, error: 'Conflict', message: expect.stringMatching(message), code: 'HERALD_JOB_NOT_SCHEDULED' });
      expect(await stored(id)).toEqual(before);
    }
    expect((await runNow('987654')).json()).toMatchObject({ statusCode: 404, code: 'HERALD_NOT_FOUND' });
    expect((await runNow('x1')).statusCode).toBe(400);
    const viewer = await post(`/api/jobs/${later.id}/run-now`, { authorization: `Bearer ${TOKENS.viewer}` });
    expect(viewer.statusCode).toBe(403);
  });

  it('the promoted event reaches the stream, signed', async () => {
    const job = await enqueue({ kind: 'k', queue: 'streamed', runAt: HOUR_AHEAD() });
    const stream = await openStream(`${s.url}/api/events?queue=streamed`, ADMIN);
    try {
      expect((await runNow(job.id)).statusCode).toBe(200);
      await waitFor(() => stream.messages.some((m) => m.json?.type === 'promoted'), { what: 'the promoted event on the stream' });
      expect(stream.messages.find((m) => m.json?.type === 'promoted')?.json).toMatchObject({
        jobId: job.id, queue: 'streamed', status: 'queued', data: { scheduledFor: job.runAt, by: { role: 'admin', label: 'alice' } },
      });
    } finally {
      await stream.close();
    }
  });
});

describe('bulk run_now', () => {
  it('runs now the scheduled and backing-off jobs a filter matches, leaves the rest, and signs each event', async () => {
    const scheduled = await Promise.all([1, 2, 3].map(() => enqueue({ kind: 'k', queue: 'bulkq', runAt: HOUR_AHEAD() })));
    const due = await enqueue({ kind: 'k', queue: 'bulkq' });
    const backoff = await enqueue({ kind: 'b', queue: 'bulkq', maxAttempts: 2, priority: 10 });
    const [c] = await s.queue.claim({ worker: W, queues: ['bulkq'], limit: 1 });
    expect(c.id).toBe(backoff.id);
    await slowBackoff.fail(W, [{ ...c, error: 'later' }]);

    const body = { action: 'run_now', filter: { queue: 'bulkq' } };
    const dry = await post('/api/jobs/bulk', ALICE, { ...body, dryRun: true });
    expect(dry.json()).toEqual({ matched: 5, affected: 4 });
    expect(await types(scheduled[0].id)).toEqual(['enqueued']);

    const done = await post('/api/jobs/bulk', ALICE, body);
    expect(done.json()).toEqual({ matched: 5, affected: 4 });
    const promoted = (await s.db.pool.query('SELECT job_id::text AS id, data FROM herald.job_events WHERE type = $1 ORDER BY job_id', ['promoted'])).rows;
    expect(promoted.map((r) => r.id).sort()).toEqual([...scheduled.map((j) => j.id), backoff.id].sort());
    for (const r of promoted) expect(r.data.by).toEqual({ role: 'admin', label: 'alice' });
    expect(await types(due.id)).toEqual(['enqueued']);
    // Nothing is left to run now.
    expect((await post('/api/jobs/bulk', ALICE, { ...body, dryRun: true })).json()).toEqual({ matched: 5, affected: 0 });
  });
});
