// The core API against real PostgreSQL: every transition, fencing, ordering and idempotency.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { ConflictError, NotFoundError, ValidationError } from './errors.ts';
import type { Queue } from './queue.ts';
import { reapJobs } from './sql/reap.ts';
import { waitFor } from '../test/support/wait.ts';

let db: TestDatabase;
let q: Queue;

beforeAll(async () => {
  db = await createTestDatabase({ backoffBaseMs: 1000, backoffMaxMs: 60_000 });
  q = db.queue;
});
afterAll(() => db.drop());
beforeEach(async () => {
  await db.pool.query('TRUNCATE herald.jobs, herald.job_events RESTART IDENTITY');
});

const W = 'host:1:aaaa';
const types = async (id: string) => (await q.events(id)).map((e) => e.type);

/** The backoff of a job's last retry in ms: its run time less the time of its retry_scheduled event (one transaction, one clock). */
async function backoffOf(queue: Queue, id: string): Promise<number> {
  const events = await queue.events(id);
  const retry = events.filter((e) => e.type === 'retry_scheduled').at(-1)!;
  return new Date((await queue.get(id))!.runAt).getTime() - new Date(retry.at).getTime();
}

describe('enqueue', () => {
  it('stores a job with defaults and writes an enqueued event', async () => {
    const { job, created } = await q.enqueue({ kind: 'echo', payload: { a: 1 } });
    expect(created).toBe(true);
    expect(job).toMatchObject({
      queue: 'default', kind: 'echo', payload: { a: 1 }, priority: 0, status: 'queued',
      attempt: 0, maxAttempts: 5, requires: [], idempotencyKey: null, lockedBy: null,
      cancelRequested: false, progress: null, result: null, lastError: null,
    });
    expect(job.id).toMatch(/^\d+$/);
    const events = await q.events(job.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'enqueued', status: 'queued', attempt: 0, jobId: job.id });
  });

  it('stores group, tags, timeoutMs and expireAt; the database refuses bad ones whatever writes them', async () => {
    const { job } = await q.enqueue({ kind: 'k', group: 'g-1', tags: ['a', 'b.c'], timeoutMs: 250, expireAt: new Date('2030-01-01T00:00:00Z') });
    expect(job).toMatchObject({ group: 'g-1', tags: ['a', 'b.c'], timeoutMs: 250, expireAt: '2030-01-01T00:00:00.000Z', waitingFor: 'no_worker' });
    const later = await q.enqueue({ kind: 'k', runAt: new Date(Date.now() + 3_600_000) });
    expect(later.job.waitingFor).toBe('scheduled');
    await expect(q.enqueue({ kind: 'k', group: 'no spaces' })).rejects.toThrow(/^group must be 1-128/);
    await expect(q.enqueue({ kind: 'k', tags: Array(17).fill('t') })).rejects.toThrow(/^tags: at most 16/);
    await expect(q.enqueue({ kind: 'k', tags: ['ok', 'a,b'] })).rejects.toThrow(/^tags: at most 16/);
    await expect(q.enqueue({ kind: 'k', tags: [''] })).rejects.toThrow(/^tags: at most 16/);
    await expect(q.enqueue({ kind: 'k', timeoutMs: 0 })).rejects.toThrow(/^timeoutMs must be an integer from 1 to 86400000/);
    await expect(q.enqueue({ kind: 'k', expireAt: 'never' })).rejects.toThrow(/^expireAt "never" is not a valid ISO date/);
    // Raw SQL too: the CHECKs hold for writers that bypass the API.
    await expect(db.pool.query(`INSERT INTO herald.jobs (kind, tags) VALUES ('k', ARRAY['a', NULL])`)).rejects.toThrow(/jobs_tags_names/);
    await expect(db.pool.query(`INSERT INTO herald.jobs (kind, timeout_ms) VALUES ('k', 86400001)`)).rejects.toThrow(/jobs_timeout_range/);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(2);
  });

  it('is all or nothing for a batch', async () => {
    await expect(
      q.enqueueMany([{ kind: 'ok' }, { kind: 'bad kind!' }, { kind: 'ok2' }]),
    ).rejects.toBeInstanceOf(ValidationError);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(0);
  });

  it('returns a batch in input order', async () => {
    const res = await q.enqueueMany(Array.from({ length: 50 }, (_, i) => ({ kind: `k${i}`, idempotencyKey: i % 2 ? `key-${i}` : null })));
    expect(res.map((r) => r.job.kind)).toEqual(Array.from({ length: 50 }, (_, i) => `k${i}`));
  });

  it('returns the same job for a reused key, and 409s a different job under it', async () => {
    const a = await q.enqueue({ kind: 'echo', payload: { x: 1, y: 2 }, idempotencyKey: 'k1' });
    const b = await q.enqueue({ kind: 'echo', payload: { y: 2, x: 1 }, idempotencyKey: 'k1' });
    expect(b.created).toBe(false);
    expect(b.job.id).toBe(a.job.id);
    await expect(q.enqueue({ kind: 'echo', payload: { x: 2 }, idempotencyKey: 'k1' })).rejects.toBeInstanceOf(ConflictError);
    await expect(q.enqueue({ kind: 'other', payload: { x: 1, y: 2 }, idempotencyKey: 'k1' })).rejects.toBeInstanceOf(ConflictError);
    await expect(q.enqueue({ kind: 'echo', queue: 'q2', payload: { x: 1, y: 2 }, idempotencyKey: 'k1' })).rejects.toBeInstanceOf(ConflictError);
    // A batch that reuses a key wrongly is rejected whole.
    await expect(q.enqueueMany([{ kind: 'fresh' }, { kind: 'echo', payload: {}, idempotencyKey: 'k1' }])).rejects.toBeInstanceOf(ConflictError);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(1);
  });

  it('gives one job for 20 concurrent enqueues with one key', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () => q.enqueue({ kind: 'echo', payload: { n: 1 }, idempotencyKey: 'same' })),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.job.id)).size).toBe(1);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(1);
  });

  it('coalesces concurrent single enqueues, and each still fails or succeeds alone', async () => {
    await q.enqueue({ kind: 'echo', payload: { v: 1 }, idempotencyKey: 'taken' });
    // A reused key conflicts alone; the statement carrying it goes through for the others.
    const first = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) =>
        i === 60 ? q.enqueue({ kind: 'echo', payload: { v: 2 }, idempotencyKey: 'taken' }) : q.enqueue({ kind: 'a', payload: { i } }),
      ),
    );
    expect(first[60]).toMatchObject({ status: 'rejected', reason: expect.any(ConflictError) });
    expect(first.filter((r) => r.status === 'fulfilled')).toHaveLength(99);
    // Fewer statements than calls: one 'enqueued' transaction per statement.
    const { rows: txs } = await db.pool.query(`SELECT count(DISTINCT tx)::int AS n FROM herald.job_events WHERE kind = 'a'`);
    expect(txs[0].n).toBeLessThan(10);
    // A row the database rejects fails its statement; the calls are retried alone and only it fails.
    const second = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) => (i === 50 ? q.enqueue({ kind: 'b', maxAttempts: 5000 }) : q.enqueue({ kind: 'b', payload: { i } }))),
    );
    expect(second[50]).toMatchObject({ status: 'rejected', reason: expect.any(ValidationError) });
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n, count(DISTINCT (payload->>'i'))::int AS d FROM herald.jobs WHERE kind = 'b'`);
    expect(rows[0]).toEqual({ n: 99, d: 99 });
  });

  it('rejects malformed input with a ValidationError and writes nothing', async () => {
    const bad = [
      { kind: '' },
      { kind: 'x'.repeat(129) },
      { kind: 'ok', queue: 'no spaces' },
      { kind: 'ok', priority: 40_000 },
      { kind: 'ok', maxAttempts: 0 },
      { kind: 'ok', maxAttempts: 1001 },
      { kind: 'ok', requires: Array.from({ length: 33 }, (_, i) => `t${i}`) },
      { kind: 'ok', runAt: 'not a date' },
      { kind: 'ok', idempotencyKey: '' },
    ];
    for (const input of bad) await expect(q.enqueue(input), JSON.stringify(input).slice(0, 80)).rejects.toBeInstanceOf(ValidationError);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(0);
  });
});

describe('row-shape checks', () => {
  it('refuse malformed rows written directly', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const attempts = [
      `UPDATE herald.jobs SET locked_by = 'x' WHERE id = ${job.id}`, // queued with a lock
      `UPDATE herald.jobs SET finished_at = now() WHERE id = ${job.id}`, // queued but finished
      `UPDATE herald.jobs SET status = 'running' WHERE id = ${job.id}`, // running without owner or lease
      `UPDATE herald.jobs SET status = 'succeeded' WHERE id = ${job.id}`, // terminal without finish time
      `UPDATE herald.jobs SET attempt = 6 WHERE id = ${job.id}`, // more attempts than allowed
      `UPDATE herald.jobs SET progress = '{"percent": 101}' WHERE id = ${job.id}`,
    ];
    for (const sql of attempts) await expect(db.pool.query(sql), sql).rejects.toMatchObject({ code: '23514' });
  });
});

describe('claim', () => {
  it('takes jobs in priority, then run-at, then creation order', async () => {
    const past = new Date(Date.now() - 60_000);
    const [low, high, older, normal] = await q.enqueueMany([
      { kind: 'low', priority: -5 },
      { kind: 'high', priority: 10 },
      { kind: 'older', runAt: past },
      { kind: 'normal' },
    ]);
    await q.enqueue({ kind: 'future', runAt: new Date(Date.now() + 60_000) });
    const order: string[] = [];
    for (;;) {
      const [job] = await q.claim({ worker: W, limit: 1 });
      if (!job) break;
      order.push(job.id);
    }
    expect(order).toEqual([high.job.id, older.job.id, normal.job.id, low.job.id]);
  });

  it('only takes jobs whose requirements the worker meets, from its queues', async () => {
    const { job: gpu } = await q.enqueue({ kind: 'train', requires: ['gpu'] });
    const { job: both } = await q.enqueue({ kind: 'train', requires: ['gpu', 'big'] });
    const { job: other } = await q.enqueue({ kind: 'x', queue: 'other' });
    expect(await q.claim({ worker: W, queues: ['default'], limit: 10 })).toEqual([]);
    const gpuOnly = await q.claim({ worker: W, queues: ['default'], capabilities: ['gpu'], limit: 10 });
    expect(gpuOnly.map((j) => j.id)).toEqual([gpu.id]);
    const all = await q.claim({ worker: W, capabilities: ['big', 'gpu', 'extra'], limit: 10 });
    expect(all.map((j) => j.id).sort()).toEqual([both.id, other.id].sort());
  });

  it('sets running, attempt, owner, start and lease, and logs a claimed event', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const [c] = await q.claim({ worker: W, limit: 5, leaseMs: 5_000, ownerLock: 1234 });
    expect(c).toMatchObject({ id: job.id, status: 'running', attempt: 1, lockedBy: W });
    expect(new Date(c.leaseExpiresAt!).getTime() - new Date(c.startedAt!).getTime()).toBeCloseTo(5_000, -2);
    const ev = (await q.events(job.id))[1];
    expect(ev).toMatchObject({ type: 'claimed', status: 'running', attempt: 1, worker: W });
    expect(ev.data).toHaveProperty('lagMs');
  });

  it('claims each of 5,000 jobs exactly once across 8 connections', async () => {
    await q.enqueueMany(Array.from({ length: 5000 }, (_, i) => ({ kind: 'n', payload: { i } })));
    const seen: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (;;) {
          const got = await q.claim({ worker: `w${w}`, limit: 37 });
          if (got.length === 0) return;
          seen.push(...got.map((j) => j.id));
        }
      }),
    );
    expect(seen).toHaveLength(5000);
    expect(new Set(seen).size).toBe(5000);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM herald.job_events WHERE type = 'claimed'`);
    expect(rows[0].n).toBe(5000);
  });
});

describe('running a job', () => {
  it('goes queued → running → progress → succeeded', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    expect((await q.progress(W, c, 40, 'reading')).held).toBe(true);
    expect((await q.get(job.id))!.progress).toEqual({ percent: 40, message: 'reading' });
    expect(await q.complete(W, [{ ...c, result: { ok: true } }])).toEqual([]);
    const done = (await q.get(job.id))!;
    expect(done).toMatchObject({ status: 'succeeded', result: { ok: true }, lockedBy: null, leaseExpiresAt: null });
    expect(done.finishedAt).not.toBeNull();
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'progress', 'succeeded']);
  });

  it('heartbeats extend the lease and write no event', async () => {
    await q.enqueue({ kind: 'echo' });
    const [c] = await q.claim({ worker: W, limit: 1, leaseMs: 1_000 });
    const { held } = await q.heartbeat(W, [c], 60_000);
    expect(held.has(c.id)).toBe(true);
    // Measured on the database's clock: the lease now ends a minute after the renewal.
    const { rows } = await db.pool.query(`SELECT lease_expires_at - now() > interval '50 seconds' AS renewed FROM herald.jobs WHERE id = $1`, [c.id]);
    expect(rows[0].renewed).toBe(true);
    expect(await types(c.id)).toEqual(['enqueued', 'claimed']);
  });

  it('retries a failure with backoff, then fails when attempts run out', async () => {
    const { job } = await q.enqueue({ kind: 'fail', maxAttempts: 2 });
    const [c1] = await q.claim({ worker: W, limit: 1 });
    expect(await q.fail(W, [{ ...c1, error: new Error('boom') }])).toEqual([]);
    let j = (await q.get(job.id))!;
    expect(j.status).toBe('queued');
    expect(j.lastError).toMatchObject({ message: 'boom', name: 'Error' });
    expect(j.lastError!.stack).toContain('boom');
    // The backoff, read on the database's clock: base 1 s less up to 20% jitter.
    const delay = await backoffOf(q, job.id);
    expect(delay).toBeGreaterThanOrEqual(800);
    expect(delay).toBeLessThanOrEqual(1_000);
    await db.pool.query('UPDATE herald.jobs SET available_at = now() WHERE id = $1', [job.id]);
    const [c2] = await q.claim({ worker: W, limit: 1 });
    expect(c2.attempt).toBe(2);
    await q.fail(W, [{ ...c2, error: 'still broken' }]);
    j = (await q.get(job.id))!;
    expect(j).toMatchObject({ status: 'failed', attempt: 2, lastError: { message: 'still broken' } });
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'retry_scheduled', 'claimed', 'failed']);
  });

  it('fails at once on a final error', async () => {
    const { job } = await q.enqueue({ kind: 'fail' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    await q.fail(W, [{ ...c, error: new Error('bad payload'), final: true }]);
    expect((await q.get(job.id))!.status).toBe('failed');
  });

  it('backoff doubles per attempt and is capped', async () => {
    const db2 = await createTestDatabase({ backoffBaseMs: 1_000, backoffMaxMs: 10_000 });
    try {
      const { job } = await db2.queue.enqueue({ kind: 'fail', maxAttempts: 8 });
      const delays: number[] = [];
      for (let i = 0; i < 7; i++) {
        await db2.pool.query('UPDATE herald.jobs SET available_at = now() WHERE id = $1', [job.id]);
        const [c] = await db2.queue.claim({ worker: W, limit: 1 });
        await db2.queue.fail(W, [{ ...c, error: 'x' }]);
        delays.push(await backoffOf(db2.queue, job.id));
      }
      // base * 2^(n-1), less up to 20% jitter, never above the cap (10 s).
      for (const [i, d] of delays.entries()) {
        const nominal = Math.min(10_000, 1_000 * 2 ** i);
        expect(d).toBeGreaterThanOrEqual(nominal * 0.8);
        expect(d).toBeLessThanOrEqual(nominal);
      }
      for (let i = 1; i < 4; i++) expect(delays[i]).toBeGreaterThan(delays[i - 1]);
    } finally {
      await db2.drop();
    }
  });

  it('releases jobs on shutdown without using an attempt', async () => {
    const { job } = await q.enqueue({ kind: 'sleep' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    expect(await q.release(W, [c])).toEqual([]);
    expect((await q.get(job.id))!).toMatchObject({ status: 'queued', attempt: 0, lockedBy: null });
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'released']);
  });
});

describe('cancel and retry', () => {
  it('cancels a queued job at once', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const c = await q.cancel(job.id);
    expect(c).toMatchObject({ status: 'cancelled', cancelRequested: true });
    expect(await q.claim({ worker: W, limit: 1 })).toEqual([]);
    expect(await types(job.id)).toEqual(['enqueued', 'cancelled']);
  });

  it('asks a running job to stop; its failure then ends it cancelled', async () => {
    const { job } = await q.enqueue({ kind: 'sleep' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    expect(await q.cancel(job.id)).toMatchObject({ status: 'running', cancelRequested: true });
    expect((await q.heartbeat(W, [c])).cancelRequested.has(c.id)).toBe(true);
    await q.fail(W, [{ ...c, error: new Error('aborted') }]);
    expect((await q.get(job.id))!.status).toBe('cancelled');
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'cancel_requested', 'cancelled']);
  });

  it('refuses to cancel a finished job and 404s an unknown one', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    await q.complete(W, [{ ...c, result: 1 }]);
    await expect(q.cancel(job.id)).rejects.toBeInstanceOf(ConflictError);
    await expect(q.cancel('999999')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('retries a failed job with one more attempt, and refuses others', async () => {
    const { job } = await q.enqueue({ kind: 'fail', maxAttempts: 1 });
    await expect(q.retry(job.id)).rejects.toBeInstanceOf(ConflictError);
    const [c] = await q.claim({ worker: W, limit: 1 });
    await q.fail(W, [{ ...c, error: 'x' }]);
    const r = await q.retry(job.id);
    expect(r).toMatchObject({ status: 'queued', maxAttempts: 2, attempt: 1, finishedAt: null });
    const [c2] = await q.claim({ worker: W, limit: 1 });
    expect(c2.attempt).toBe(2);
    await q.complete(W, [{ ...c2, result: null }]);
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'failed', 'retried', 'claimed', 'succeeded']);
    await expect(q.retry('424242')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('fencing and the reaper', () => {
  it('a stale worker cannot complete, fail or heartbeat after a reap', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const [stale] = await q.claim({ worker: 'A', limit: 1, leaseMs: 100 });
    await db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 s' WHERE id = $1`, [job.id]);
    expect(await q.reap()).toMatchObject({ requeued: 1 });
    const [fresh] = await q.claim({ worker: 'B', limit: 1 });
    expect(fresh.attempt).toBe(2);
    const before = await db.pool.query('SELECT * FROM herald.jobs WHERE id = $1', [job.id]);
    expect(await q.complete('A', [{ ...stale, result: 'stale' }])).toEqual([job.id]);
    expect(await q.fail('A', [{ ...stale, error: 'stale' }])).toEqual([job.id]);
    expect((await q.heartbeat('A', [stale])).held.size).toBe(0);
    expect((await q.progress('A', stale, 50)).held).toBe(false);
    // Same worker name but the old attempt is fenced too.
    expect(await q.complete('B', [{ ...stale, result: 'stale' }])).toEqual([job.id]);
    const after = await db.pool.query('SELECT * FROM herald.jobs WHERE id = $1', [job.id]);
    expect(after.rows[0]).toEqual(before.rows[0]);
    expect(await q.complete('B', [{ ...fresh, result: 'fresh' }])).toEqual([]);
    expect((await q.get(job.id))!.result).toBe('fresh');
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'lease_expired', 'claimed', 'succeeded']);
  });

  it('fails a reaped job that is out of attempts, and cancels one that was asked to cancel', async () => {
    const { job: a } = await q.enqueue({ kind: 'x', maxAttempts: 1 });
    const { job: b } = await q.enqueue({ kind: 'y' });
    await q.claim({ worker: W, limit: 2 });
    await q.cancel(b.id);
    await db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 s'`);
    expect(await q.reap()).toEqual({ requeued: 0, failed: 1, cancelled: 1, orphans: 0 });
    expect((await q.get(a.id))!.lastError).toMatchObject({ reason: 'lease_expired' });
  });

  // The rescuer race: a worker completes a job just as the reaper requeues it for its expired
  // lease. Whichever takes the row first wins; the other must change nothing. Both orders are
  // forced with two sessions and a row lock held open.
  describe('the rescuer race', () => {
    async function expiredClaim() {
      const { job } = await q.enqueue({ kind: 'echo' });
      const [c] = await q.claim({ worker: W, limit: 1, leaseMs: 60_000 });
      await db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 s' WHERE id = $1`, [job.id]);
      return c;
    }

    it('the late completion holds the row first: the reaper skips it and the success stands', async () => {
      const c = await expiredClaim();
      const worker = await db.pool.connect();
      try {
        await worker.query('BEGIN');
        const done = await worker.query(
          `UPDATE herald.jobs SET status = 'succeeded', finished_at = now(), locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL
           WHERE id = $1 AND attempt = $2 AND locked_by = $3 AND status = 'running'`,
          [c.id, c.attempt, W],
        );
        expect(done.rowCount).toBe(1);
        // The reaper neither waits for the locked row nor takes it.
        expect(await q.reap()).toMatchObject({ requeued: 0 });
        await worker.query('COMMIT');
      } finally {
        worker.release();
      }
      expect(await q.reap()).toMatchObject({ requeued: 0 });
      expect((await q.get(c.id))!).toMatchObject({ status: 'succeeded', attempt: 1 });
    });

    it("the reaper's requeue holds the row first: the late completion waits for it, then is fenced", async () => {
      const c = await expiredClaim();
      const reaper = await db.pool.connect();
      try {
        await reaper.query('BEGIN');
        const reaped = await reaper.query(reapJobs.text, [1000]);
        expect(reaped.rows).toEqual([{ id: c.id, status: 'queued' }]);
        const completing = q.complete(W, [{ ...c, result: 'late' }]);
        // The completion is blocked on the row the reaper holds.
        await waitFor(
          async () => (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rowCount,
          { what: 'the completion to wait for the reaper\'s row lock' },
        );
        await reaper.query('COMMIT');
        expect(await completing).toEqual([c.id]);
      } finally {
        reaper.release();
      }
      expect((await q.get(c.id))!).toMatchObject({ status: 'queued', attempt: 1, result: null, lockedBy: null, lastError: { reason: 'lease_expired' } });
      expect(await types(c.id)).toEqual(['enqueued', 'claimed', 'lease_expired']);
    });
  });

  it('a worker whose liveness lock is gone gets a short grace: requeued once it passes, kept if the worker renews', async () => {
    const session = await db.pool.connect();
    await session.query('SELECT pg_advisory_lock($1, $2)', [0x48524c44, 5555]);
    await q.enqueueMany([{ kind: 'a' }, { kind: 'b' }, { kind: 'c' }]);
    await q.claim({ worker: 'alive', limit: 1, ownerLock: 5555, leaseMs: 60_000 });
    const [orphan] = await q.claim({ worker: 'dead', limit: 1, ownerLock: 7777, leaseMs: 60_000 });
    const [blip] = await q.claim({ worker: 'blip', limit: 1, ownerLock: 8888, leaseMs: 60_000 });
    // Locks 7777 and 8888 are missing: not a death yet, their leases end after the grace.
    expect(await q.reap()).toMatchObject({ requeued: 0, orphans: 2 });
    const lease = async (id: string) =>
      (await db.pool.query(`SELECT lease_expires_at - now() AS left FROM herald.jobs WHERE id = $1`, [id])).rows[0].left;
    expect((await lease(orphan.id)).seconds ?? 0).toBeLessThanOrEqual(1);
    // The blipped worker reconnects: it retakes its lock and renews at once.
    await session.query('SELECT pg_advisory_lock($1, $2)', [0x48524c44, 8888]);
    expect((await q.heartbeat('blip', [{ id: blip.id, attempt: blip.attempt }], 60_000)).held.has(blip.id)).toBe(true);
    // The grace passes (the shortened leases run out).
    await db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 ms' WHERE lease_expires_at < now() + interval '2 s'`);
    expect(await q.reap()).toMatchObject({ requeued: 1, orphans: 0 });
    expect((await q.get(orphan.id))!).toMatchObject({ status: 'queued', lastError: { reason: 'owner_gone' } });
    expect((await q.get(blip.id))!).toMatchObject({ status: 'running', attempt: 1, lockedBy: 'blip' });
    await session.query('SELECT pg_advisory_unlock_all()');
    session.release();
  });

  it('lets only one reaper run at a time', async () => {
    const holder = await db.pool.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1, 1)', [0x48524c44]);
    await q.enqueue({ kind: 'x' });
    await q.claim({ worker: W, limit: 1 });
    await db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 s'`);
    expect(await q.reap()).toMatchObject({ requeued: 0 });
    await holder.query('COMMIT');
    holder.release();
    expect(await q.reap()).toMatchObject({ requeued: 1 });
  });
});

describe('notifications', () => {
  async function collect(fn: () => Promise<unknown>) {
    const client = await db.pool.connect();
    const got: { channel: string; payload?: string }[] = [];
    client.on('notification', (n) => got.push({ channel: n.channel, payload: n.payload }));
    await client.query('LISTEN herald_jobs; LISTEN herald_events; LISTEN herald_control');
    try {
      await fn();
      await client.query('SELECT 1');
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await client.query('UNLISTEN *');
      client.removeAllListeners('notification');
      client.release();
    }
    return got;
  }

  it('a batch of 1,000 jobs into 2 queues sends exactly 2 job notifications', async () => {
    const got = await collect(() => q.enqueueMany(Array.from({ length: 1000 }, (_, i) => ({ kind: 'n', queue: i % 2 ? 'a' : 'b' }))));
    expect(got.filter((n) => n.channel === 'herald_jobs').map((n) => n.payload).sort()).toEqual(['a', 'b']);
    expect(got.filter((n) => n.channel === 'herald_events')).toHaveLength(1);
  });

  it('a rolled-back insert sends none', async () => {
    const got = await collect(async () => {
      const c = await db.pool.connect();
      await c.query('BEGIN');
      await c.query(`INSERT INTO herald.jobs (kind) SELECT 'n' FROM generate_series(1, 10)`);
      await c.query('ROLLBACK');
      c.release();
    });
    expect(got).toEqual([]);
  });

  it('a scheduled job announces when it becomes runnable; heartbeats send nothing', async () => {
    const at = new Date(Date.now() + 5_000);
    const got = await collect(() => q.enqueue({ kind: 'later', queue: 'q', runAt: at }));
    expect(got.filter((n) => n.channel === 'herald_jobs').map((n) => n.payload)).toEqual([`q ${at.getTime()}`]);
    await q.enqueue({ kind: 'now' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    expect(await collect(() => q.heartbeat(W, [c]))).toEqual([]);
  });

  it('a retry for now and a cancel request wake the right listeners', async () => {
    const { job } = await q.enqueue({ kind: 'x', queue: 'r', maxAttempts: 1 });
    const [c] = await q.claim({ worker: W, limit: 1 });
    const cancel = await collect(() => q.cancel(job.id));
    expect(cancel.filter((n) => n.channel === 'herald_control').map((n) => n.payload)).toEqual([`cancel ${W}`]);
    await q.fail(W, [{ ...c, error: 'x' }]);
    const retried = await collect(() => q.retry(job.id));
    expect(retried.filter((n) => n.channel === 'herald_jobs').map((n) => n.payload)).toEqual(['r']);
  });
});

describe('reads and retention', () => {
  it('lists newest first with filters and a cursor, and counts per queue', async () => {
    await q.enqueueMany(Array.from({ length: 7 }, (_, i) => ({ kind: i % 2 ? 'odd' : 'even', queue: 'l' })));
    await q.enqueue({ kind: 'later', queue: 'l', runAt: new Date(Date.now() + 60_000) });
    const p1 = await q.list({ queue: 'l', kind: 'even', limit: 3 });
    expect(p1.jobs).toHaveLength(3);
    expect(p1.next).not.toBeNull();
    const p2 = await q.list({ queue: 'l', kind: 'even', limit: 3, before: p1.next! });
    expect(p2.jobs).toHaveLength(1);
    expect(p2.next).toBeNull();
    const ids = [...p1.jobs, ...p2.jobs].map((j) => Number(j.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(await q.counts()).toEqual([{ queue: 'l', queued: 7, scheduled: 1, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0, paused: false, concurrency: null, groupConcurrency: null, rateLimit: null, deadLetter: null, updatedBy: null, updatedAt: null }]);
  });

  it('cleanup deletes old finished jobs and their events in batches, and nothing else', async () => {
    await q.enqueueMany(Array.from({ length: 25 }, () => ({ kind: 'x' })));
    const claimed = await q.claim({ worker: W, limit: 20 });
    await q.complete(W, claimed.map((c) => ({ ...c, result: null })));
    await db.pool.query(`UPDATE herald.jobs SET finished_at = now() - interval '2 days' WHERE status = 'succeeded'`);
    expect(await q.cleanup(24 * 3_600_000, 7)).toBe(20);
    const { rows } = await db.pool.query(
      `SELECT (SELECT count(*)::int FROM herald.jobs) AS jobs, (SELECT count(*)::int FROM herald.job_events) AS events`,
    );
    expect(rows[0]).toEqual({ jobs: 5, events: 5 });
  });
});
