// Fencing and the reaper against real PostgreSQL: a stale worker changes nothing, expired leases
// and vanished owners are requeued, and the rescuer race is forced both ways.
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { reapJobs } from './sql/reap.ts';
import { waitFor } from '../test/support/wait.ts';

const db = useTestDatabase({ backoffBaseMs: 1000, backoffMaxMs: 60_000 }, { truncate: ['herald.jobs', 'herald.job_events'] });
const q = db.queue;

const W = 'host:1:aaaa';
const types = async (id: string) => (await q.events(id)).map((e) => e.type);

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
