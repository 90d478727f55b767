// Dead letters over HTTP: the setting on PATCH /api/queues/:queue and GET /api/queues, the copy
// in the Job JSON (deadLetterOf), and the bulk action redrive, which runs each piece of work at
// most once. Replies are checked against the OpenAPI document by testServer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServer, type TestServer } from './server-support.ts';
import { lockWaitersReach, pidOf } from './support/lock-waiters.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(() => s.close());

const inject = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => s.app.inject({ method, url, ...(payload ? { payload } : {}) });

describe('dead-letter queues over HTTP', () => {
  it('sets, shows and clears deadLetter; a bad one is a 400 that changes nothing', async () => {
    const set = await inject('PATCH', '/api/queues/mail', { deadLetter: 'mail.dead' });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toMatchObject({ queue: 'mail', deadLetter: 'mail.dead' });
    expect((await inject('GET', '/api/queues')).json().queues).toContainEqual(expect.objectContaining({ queue: 'mail', deadLetter: 'mail.dead' }));
    for (const bad of [{ deadLetter: 'mail' }, { deadLetter: 'no spaces' }]) {
      const r = await inject('PATCH', '/api/queues/mail', bad);
      expect(r.statusCode, JSON.stringify(bad)).toBe(400);
    }
    expect((await inject('PATCH', '/api/queues/mail', { deadLetter: 'mail' })).json().message).toBe('deadLetter must name another queue: queue mail cannot be its own dead-letter queue');
    expect((await inject('PATCH', '/api/queues/mail', { deadLetter: 'no spaces' })).json().message).toMatch(/^deadLetter must be 1-128 characters of \[A-Za-z0-9_.:-\], or null/);
    expect((await inject('GET', '/api/queues')).json().queues).toContainEqual(expect.objectContaining({ queue: 'mail', deadLetter: 'mail.dead' }));
    expect((await inject('PATCH', '/api/queues/mail', { deadLetter: null })).json().deadLetter).toBeNull();
  });

  it('a job that fails for good shows its copy; redrive sends the copy back as a new job', async () => {
    await inject('PATCH', '/api/queues/billing', { deadLetter: 'billing.dead' });
    const job = (await inject('POST', '/api/jobs', { kind: 'charge', queue: 'billing', payload: { n: 1 }, maxAttempts: 1 })).json();
    expect(job.deadLetterOf).toBeNull();
    const [claimed] = await s.queue.claim({ worker: 'w:1:x', queues: ['billing'], limit: 1 });
    await s.queue.fail('w:1:x', [{ id: claimed.id, attempt: 1, error: new Error('nope') }]);

    const failed = (await inject('GET', `/api/jobs/${job.id}/events`)).json().events.at(-1);
    expect(failed).toMatchObject({ type: 'failed', data: { deadLetter: { queue: 'billing.dead' } } });
    const copyId = failed.data.deadLetter.jobId as string;
    expect((await inject('GET', `/api/jobs/${copyId}`)).json()).toMatchObject({ queue: 'billing.dead', kind: 'charge', payload: { n: 1 }, deadLetterOf: job.id });

    const dry = await inject('POST', '/api/jobs/bulk', { action: 'redrive', filter: { queue: 'billing.dead' }, dryRun: true });
    expect(dry.json()).toEqual({ matched: 1, affected: 1 });
    const done = await inject('POST', '/api/jobs/bulk', { action: 'redrive', filter: { queue: 'billing.dead' } });
    expect(done.json()).toEqual({ matched: 1, affected: 1 });
    const copy = (await inject('GET', `/api/jobs/${copyId}`)).json();
    expect(copy).toMatchObject({ status: 'cancelled', lastError: { reason: 'redriven' } });
    expect((await inject('GET', `/api/jobs/${copy.lastError.jobId}`)).json()).toMatchObject({ queue: 'billing', kind: 'charge', status: 'queued', deadLetterOf: null });
  });
});

const W = 'w:1:redrive';
const redrive = (queue: string, dryRun = false) =>
  inject('POST', '/api/jobs/bulk', { action: 'redrive', filter: { queue }, ...(dryRun ? { dryRun } : {}) });
const job = async (id: string) => (await inject('GET', `/api/jobs/${id}`)).json();
const jobsOf = async (queue: string) =>
  (await s.db.pool.query<{ id: string; status: string; payload: unknown; dead_letter_of: string | null; last_error: { reason?: string; jobId?: string } | null }>(
    'SELECT j.id::text, j.status, j.payload, j.dead_letter_of::text, j.last_error FROM herald.jobs j WHERE j.queue = $1 ORDER BY j.id', [queue],
  )).rows;

/** Claims job `id` (the only one runnable in its queue) and ends its attempt: failed (for good, at its last attempt) or succeeded. */
async function runOnce(id: string, outcome: 'fail' | 'succeed') {
  const { queue } = await job(id);
  const [claimed] = await s.queue.claim({ worker: W, queues: [queue], limit: 1 });
  expect(claimed.id).toBe(id);
  if (outcome === 'fail') await s.queue.fail(W, [{ id, attempt: claimed.attempt, error: new Error('card declined') }]);
  else await s.queue.complete(W, [{ id, attempt: claimed.attempt, result: null }]);
}
const retry = async (id: string) => expect((await inject('POST', `/api/jobs/${id}/retry`)).statusCode).toBe(200);

describe('a redrive runs each piece of work at most once', () => {
  // Reproduced on the code before: S1 failed for good twice (two copies), S2 failed once and
  // succeeded on a retry (one copy): the redrive made 3 new jobs, S1's work twice and S2's again.
  it('one copy per source: a second terminal failure replaces the first; a source that succeeded or waits again is skipped', async () => {
    await inject('PATCH', '/api/queues/pay', { deadLetter: 'pay-dead' });
    const enqueue = async (n: number) => (await inject('POST', '/api/jobs', { kind: 'charge', queue: 'pay', payload: { n }, maxAttempts: 1 })).json().id as string;
    const s1 = await enqueue(1);
    await runOnce(s1, 'fail');
    await retry(s1);
    await runOnce(s1, 'fail');
    const s2 = await enqueue(2);
    await runOnce(s2, 'fail');
    await retry(s2);
    await runOnce(s2, 'succeed');
    const s3 = await enqueue(3);
    await runOnce(s3, 'fail');
    await retry(s3); // queued again, not yet run

    const copies = await jobsOf('pay-dead');
    expect(copies.map((c) => [c.dead_letter_of, c.status])).toEqual([[s1, 'cancelled'], [s1, 'queued'], [s2, 'queued'], [s3, 'queued']]);
    // The older copy of S1 names the one that replaced it, and says so in its events.
    expect(copies[0].last_error).toMatchObject({ reason: 'replaced', jobId: copies[1].id });
    expect((await inject('GET', `/api/jobs/${copies[0].id}/events`)).json().events.map((e: { type: string }) => e.type)).toEqual(['enqueued', 'cancelled']);

    // The dry run says what the real run then does: one copy of four sent back.
    expect((await redrive('pay-dead', true)).json()).toEqual({ matched: 4, affected: 1 });
    expect((await redrive('pay-dead')).json()).toEqual({ matched: 4, affected: 1 });
    const pay = await jobsOf('pay');
    const fresh = pay.filter((j) => ![s1, s2, s3].includes(j.id));
    expect(fresh.map((j) => j.payload)).toEqual([{ n: 1 }]);
    expect((await job(copies[1].id)).lastError).toMatchObject({ reason: 'redriven', jobId: fresh[0].id });
    // S2's and S3's copies are left as they were; nothing more goes on a second run.
    expect((await jobsOf('pay-dead')).map((c) => c.status)).toEqual(['cancelled', 'cancelled', 'queued', 'queued']);
    expect((await redrive('pay-dead', true)).json()).toEqual({ matched: 4, affected: 0 });
    expect((await redrive('pay-dead')).json()).toEqual({ matched: 4, affected: 0 });
    expect(await jobsOf('pay')).toHaveLength(4);
  });

  // The dry run used to return {matched} alone: on a queue that holds no dead-letter copy it said
  // 4 where the real run affected 0.
  it('a dry run on a queue that is not a dead-letter queue says it would affect none, like the real run', async () => {
    for (let i = 0; i < 4; i++) await inject('POST', '/api/jobs', { kind: 'k', queue: 'plain' });
    expect((await redrive('plain', true)).json()).toEqual({ matched: 4, affected: 0 });
    expect((await redrive('plain')).json()).toEqual({ matched: 4, affected: 0 });
    expect((await jobsOf('plain')).map((j) => j.status)).toEqual(['queued', 'queued', 'queued', 'queued']);
    // The other actions' dry runs count by the same test as the action.
    const bulk = (action: string, dryRun: boolean) => inject('POST', '/api/jobs/bulk', { action, filter: { queue: 'plain' }, dryRun });
    expect((await bulk('retry', true)).json()).toEqual({ matched: 4, affected: 0 });
    expect((await bulk('cancel', true)).json()).toEqual({ matched: 4, affected: 4 });
    expect((await jobsOf('plain')).map((j) => j.status)).toEqual(['queued', 'queued', 'queued', 'queued']);
    expect((await bulk('cancel', false)).json()).toEqual({ matched: 4, affected: 4 });
    expect((await bulk('delete', true)).json()).toEqual({ matched: 4, affected: 4 });
  });

  // Reproduced before: the redriven parent became a new job outside its flow; its children
  // stayed cancelled, and a later flow retry ran the parent's work a second time.
  it('a copy of a flow job retries that job in its flow: its children wait for it again, and a flow retry runs nothing twice', async () => {
    await inject('PATCH', '/api/queues/etl', { deadLetter: 'etl-dead' });
    const created = (await inject('POST', '/api/flows', {
      jobs: [{ ref: 'load', kind: 'load', queue: 'etl', maxAttempts: 1 }, { ref: 'report', kind: 'report', queue: 'etl', dependsOn: ['load'] }],
    })).json();
    const flow = created.flow as { id: string };
    const [load, report] = (created.jobs as { id: string }[]).map((j) => j.id);
    await runOnce(load, 'fail');
    expect((await job(report)).status).toBe('cancelled');
    const [copy] = await jobsOf('etl-dead');

    expect((await redrive('etl-dead')).json()).toEqual({ matched: 1, affected: 1 });
    expect(await job(load)).toMatchObject({ status: 'queued', flowId: flow.id });
    expect((await job(copy.id)).lastError).toMatchObject({ reason: 'redriven', jobId: load });
    expect((await job(report)).status).toBe('blocked');
    expect(await jobsOf('etl')).toHaveLength(2); // no job outside the flow
    // The flow retry finds nothing failed: the work runs once.
    expect((await inject('POST', `/api/flows/${flow.id}/retry`)).json()).toEqual({ affected: 0 });
    await runOnce(load, 'succeed');
    expect((await job(report)).status).toBe('queued');
  });

  // A retry of the source, in flight when the redrive comes, makes the redrive wait for it and then
  // skip the copy: without the FOR SHARE on the sources in REDRIVE (queue/sql/dead-letter.ts), the
  // redrive reads its snapshot's 'failed', does not wait, and sends a new job beside the retried
  // source: the work twice.
  it('waits for a retry of the source in flight, then skips its copy', async () => {
    await inject('PATCH', '/api/queues/pay2', { deadLetter: 'pay2-dead' });
    const source = (await inject('POST', '/api/jobs', { kind: 'charge', queue: 'pay2', maxAttempts: 1 })).json().id as string;
    await runOnce(source, 'fail');
    const holder = await s.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`UPDATE herald.jobs SET status = 'queued', finished_at = NULL, max_attempts = 2 WHERE id = $1`, [source]);
      const redriving = redrive('pay2-dead');
      // The redrive, on the server's pool, waits for the retry's row lock.
      await lockWaitersReach(s.db.pool, { waiter: { app: 'herald:server' }, holder: await pidOf(holder) });
      await holder.query('COMMIT');
      expect((await redriving).json()).toEqual({ matched: 1, affected: 0 });
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      holder.release();
    }
    expect((await jobsOf('pay2')).map((j) => [j.id, j.status])).toEqual([[source, 'queued']]);
    expect((await jobsOf('pay2-dead')).map((j) => j.status)).toEqual(['queued']);
  });
});
