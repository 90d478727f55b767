// Dead-letter queues against real PostgreSQL: every path to a terminal failure leaves a copy in
// the same transaction, the failure's event names it, and a redrive sends copies home.
import { beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { claimJobs } from './sql/claim.ts';
import { completeJobs, failJobs, renewLeases } from './sql/lease.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events', 'herald.queues'] });
const q = db.queue;

const W = 'host:1:dead';
const copiesOf = async (id: string) =>
  (await db.pool.query<{ id: string }>('SELECT id::text FROM herald.jobs WHERE dead_letter_of = $1', [id])).rows.map((r) => r.id);
const lastEvent = async (id: string) => (await q.events(id)).at(-1)!;

/** A job of `queue` claimed by W, with one attempt, so its next failure is final. */
async function running(queue = 'billing') {
  const { job } = await q.enqueue({ kind: 'charge', queue, payload: { customer: 7 }, group: 'acme', tags: ['eu', 'vip'], maxAttempts: 1, priority: 3 });
  const [claimed] = await q.claim({ worker: W, queues: [queue], limit: 1 });
  expect(claimed.id).toBe(job.id);
  return claimed;
}

describe('dead-letter setting', () => {
  it('is stored with the queue settings, shown with the queue, cleared by null, and must name another queue', async () => {
    const info = await q.patchQueue('billing', { deadLetter: 'billing.dead' });
    expect(info).toMatchObject({ queue: 'billing', deadLetter: 'billing.dead', paused: false });
    expect((await q.counts()).find((c) => c.queue === 'billing')?.deadLetter).toBe('billing.dead');
    // Another setting leaves it alone; null clears it.
    expect((await q.patchQueue('billing', { concurrency: 3 })).deadLetter).toBe('billing.dead');
    expect((await q.patchQueue('billing', { deadLetter: null })).deadLetter).toBeNull();
    // Each rule in its own words: one message, one rule.
    await expect(q.patchQueue('billing', { deadLetter: 'billing' })).rejects.toThrow(/^deadLetter must name another queue: queue billing cannot be its own dead-letter queue$/);
    await expect(q.patchQueue('billing', { deadLetter: 'no spaces' })).rejects.toThrow(/^deadLetter must be 1-128 characters of \[A-Za-z0-9_.:-\], or null$/);
    expect((await q.counts('billing'))[0].deadLetter).toBeNull();
  });
});

describe('a terminal failure', () => {
  beforeEach(async () => {
    await q.patchQueue('billing', { deadLetter: 'billing.dead' });
  });

  it('from a worker copies kind, payload, group and tags into the dead-letter queue, and the failed event names the copy', async () => {
    const job = await running();
    await q.fail(W, [{ id: job.id, attempt: job.attempt, error: new Error('card declined') }]);
    const [copyId] = await copiesOf(job.id);
    const copy = (await q.get(copyId))!;
    expect(copy).toMatchObject({
      queue: 'billing.dead', kind: 'charge', payload: { customer: 7 }, group: 'acme', tags: ['eu', 'vip'],
      status: 'queued', attempt: 0, deadLetterOf: job.id, priority: 3,
    });
    expect((await q.get(job.id))!.deadLetterOf).toBeNull();
    const failed = await lastEvent(job.id);
    expect(failed).toMatchObject({ type: 'failed', data: { error: 'card declined', deadLetter: { queue: 'billing.dead', jobId: copyId } } });
    // The copy and the failure were written by one transaction.
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(DISTINCT tx)::int AS n FROM herald.job_events WHERE (job_id = $1 AND type = 'failed') OR (job_id = $2 AND type = 'enqueued')`,
      [job.id, copyId],
    );
    expect(rows[0].n).toBe(1);
  });

  it('from a final timeout (a final fail) and from the reaper copies too; a retry that will run again does not', async () => {
    const { job: retried } = await q.enqueue({ kind: 'k', queue: 'billing', maxAttempts: 3 });
    const timedOut = await running();
    const [r] = await q.claim({ worker: W, queues: ['billing'], limit: 1 });
    expect(r.id).toBe(retried.id);
    await q.fail(W, [
      { id: timedOut.id, attempt: 1, error: new Error('timed out after 5 ms (timeoutMs)'), final: true },
      { id: r.id, attempt: 1, error: new Error('flaky') },
    ]);
    expect(await copiesOf(timedOut.id)).toHaveLength(1);
    expect(await copiesOf(r.id)).toHaveLength(0);
    expect((await lastEvent(r.id)).data).not.toHaveProperty('deadLetter');

    const reaped = await running();
    await db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 s' WHERE id = $1`, [reaped.id]);
    expect(await q.reap()).toMatchObject({ failed: 1 });
    const [copyId] = await copiesOf(reaped.id);
    expect(await lastEvent(reaped.id)).toMatchObject({
      type: 'lease_expired', status: 'failed', data: { reason: 'lease_expired', deadLetter: { queue: 'billing.dead', jobId: copyId } },
    });
  });

  it('of a queue without a dead-letter queue, or of a copy itself, makes no copy (queues pointing at each other cannot loop)', async () => {
    const plain = await running('other');
    await q.fail(W, [{ id: plain.id, attempt: 1, error: 'no' }]);
    expect(await copiesOf(plain.id)).toHaveLength(0);
    expect((await lastEvent(plain.id)).data).toEqual({ error: 'no' });

    await q.patchQueue('billing.dead', { deadLetter: 'billing' });
    const job = await running();
    await q.fail(W, [{ id: job.id, attempt: 1, error: 'no' }]);
    const [copyId] = await copiesOf(job.id);
    const [copy] = await q.claim({ worker: W, queues: ['billing.dead'], limit: 1 });
    expect(copy.id).toBe(copyId);
    await q.fail(W, [{ id: copy.id, attempt: copy.attempt, error: 'still no', final: true }]);
    expect(await copiesOf(copyId)).toHaveLength(0);
  });
});

describe('the statements of a worker', () => {
  // The copies used to be made by an INSERT in every update's trigger, which fired the insert
  // triggers of jobs (and of job_events) on every claim, renewal and outcome, copy or not.
  it('fire no insert trigger of jobs unless a job fails for good in a queue with a dead-letter queue', async () => {
    await q.patchQueue('billing', { deadLetter: 'billing.dead' });
    await q.enqueueMany([1, 2, 3].map(() => ({ kind: 'charge', queue: 'billing', maxAttempts: 1 })));
    const c = await db.pool.connect();
    const calls = async () => {
      const { rows } = await c.query<{ funcname: string; calls: string }>(`SELECT funcname, calls FROM pg_stat_xact_user_functions`);
      return Object.fromEntries(rows.map((r) => [r.funcname, Number(r.calls)]));
    };
    try {
      await c.query(`BEGIN; SET LOCAL track_functions = 'all'`);
      const { rows } = await c.query<{ id: string; attempt: number }>(claimJobs.rows.text, [['billing'], [], 3, W, null, 30_000, null]);
      const [a, b, d] = rows.sort((x, y) => Number(x.id) - Number(y.id));
      await c.query(renewLeases.text, [[a.id, b.id, d.id], [1, 1, 1], W, 30_000, null]);
      await c.query(completeJobs.text, [[a.id], [1], W, ['null']]);
      expect(await calls()).toMatchObject({ jobs_after_update: 3 });
      expect(await calls()).not.toHaveProperty('jobs_after_insert');
      // A final failure: one copy, made by one INSERT, after the failed events.
      await c.query(failJobs.text, [[b.id, d.id], [1, 1], W, 1_000, 1_000, ['"x"', '"y"'], [false, false]]);
      expect(await calls()).toMatchObject({ jobs_after_update: 4, jobs_after_insert: 1 });
      await c.query('COMMIT');
    } finally {
      await c.query('ROLLBACK').catch(() => {});
      c.release();
    }
  });

  it('copy the jobs of one failing batch in their order, each failed event before its copy\'s enqueued event', async () => {
    await q.patchQueue('billing', { deadLetter: 'billing.dead' });
    const jobs = [await running(), await running(), await running()];
    await q.fail(W, jobs.map((j) => ({ id: j.id, attempt: 1, error: 'no' })));
    const copies = (await Promise.all(jobs.map((j) => copiesOf(j.id)))).map(([id]) => id);
    expect([...copies].sort((x, y) => Number(x) - Number(y))).toEqual(copies);
    const { rows } = await db.pool.query<{ job_id: string; type: string }>(
      `SELECT job_id::text, type FROM herald.job_events
       WHERE (type = 'failed' AND job_id = ANY($1::bigint[])) OR (type = 'enqueued' AND job_id = ANY($2::bigint[])) ORDER BY tx, id`,
      [jobs.map((j) => j.id), copies],
    );
    expect(rows.map((r) => [r.job_id, r.type])).toEqual([
      ...jobs.map((j) => [j.id, 'failed']),
      ...copies.map((id) => [id, 'enqueued']),
    ]);
  });
});

describe('redrive', () => {
  it('sends each waiting or failed copy back to its source queue as a new job, once', async () => {
    await q.patchQueue('billing', { deadLetter: 'billing.dead' });
    const a = await running();
    const b = await running();
    await q.fail(W, [{ id: a.id, attempt: 1, error: 'x' }, { id: b.id, attempt: 1, error: 'y' }]);
    const [copyA] = await copiesOf(a.id);
    const [copyB] = await copiesOf(b.id);
    // Not a copy: a redrive leaves it alone even when the filter matches it.
    const { job: bystander } = await q.enqueue({ kind: 'other', queue: 'billing.dead' });

    expect(await q.bulk('redrive', { queue: 'billing.dead' })).toEqual({ matched: 3, affected: 2 });
    const moved = (await q.get(copyA))!;
    expect(moved).toMatchObject({ status: 'cancelled', lastError: { reason: 'redriven' } });
    const fresh = (await q.get(String(moved.lastError?.jobId)))!;
    expect(fresh).toMatchObject({
      queue: 'billing', kind: 'charge', payload: { customer: 7 }, group: 'acme', tags: ['eu', 'vip'],
      status: 'queued', attempt: 0, deadLetterOf: null,
    });
    expect(moved.lastError?.message).toBe(`redriven to queue billing as job ${fresh.id}`);
    expect((await q.get(copyB))!.status).toBe('cancelled');
    expect((await q.get(bystander.id))!.status).toBe('queued');
    expect((await q.events(fresh.id)).map((e) => e.type)).toEqual(['enqueued']);
    expect((await q.events(copyA)).map((e) => e.type)).toEqual(['enqueued', 'cancelled']);

    // Done once: the copies are no longer eligible.
    expect(await q.bulk('redrive', { queue: 'billing.dead' })).toEqual({ matched: 3, affected: 0 });
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM herald.jobs WHERE queue = 'billing' AND status = 'queued'`);
    expect(rows[0].n).toBe(2);
  });
});
