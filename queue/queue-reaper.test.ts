// Fencing and the reaper against real PostgreSQL: a stale worker changes nothing, expired leases
// and vanished owners are requeued, and the rescuer race is forced both ways.
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { markOrphans, reapJobs } from './sql/reap.ts';
import { DEFAULTS } from './defaults.ts';
import { lockWaitersReach, pidOf } from '../test/support/lock-waiters.ts';

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
        await lockWaitersReach(db.pool, { waiter: { app: 'herald' }, holder: await pidOf(reaper) });
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
    // Locks 7777 and 8888 are missing: not a death yet, their leases end after the grace. The
    // reap's statements run in a transaction of the test's, so now() is the reap's own time and
    // the lease left is the whole grace (compared in full: node-postgres gives an interval under
    // a second in `milliseconds` only). Caught: a grace of 0 (markOrphans's `$2` -> `0`).
    const reaper = await db.pool.connect();
    try {
      await reaper.query('BEGIN');
      expect((await reaper.query(reapJobs.text, [1000])).rowCount).toBe(0);
      expect((await reaper.query(markOrphans.text, [1000, DEFAULTS.lockLossGraceMs])).rows.map((r) => r.id).sort()).toEqual([orphan.id, blip.id].sort());
      const { rows } = await reaper.query<{ ms: number }>(
        `SELECT extract(epoch FROM lease_expires_at - now())::float8 * 1000 AS ms FROM herald.jobs WHERE id = ANY($1::bigint[])`,
        [[orphan.id, blip.id]],
      );
      for (const { ms } of rows) {
        expect(ms).toBeGreaterThan(0);
        expect(ms).toBeLessThanOrEqual(DEFAULTS.lockLossGraceMs);
      }
      await reaper.query('COMMIT');
    } catch (err) {
      await reaper.query('ROLLBACK');
      throw err;
    } finally {
      reaper.release();
    }
    // The blipped worker reconnects: it retakes its lock and renews at once.
    await session.query('SELECT pg_advisory_lock($1, $2)', [0x48524c44, 8888]);
    expect((await q.heartbeat('blip', [{ id: blip.id, attempt: blip.attempt }], 60_000, 8888)).held.has(blip.id)).toBe(true);
    // The grace passes (the shortened leases run out).
    await db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 ms' WHERE lease_expires_at < now() + interval '2 s'`);
    expect(await q.reap()).toMatchObject({ requeued: 1, orphans: 0 });
    expect((await q.get(orphan.id))!).toMatchObject({ status: 'queued', lastError: { reason: 'owner_gone' } });
    expect((await q.get(blip.id))!).toMatchObject({ status: 'running', attempt: 1, lockedBy: 'blip' });
    await session.query('SELECT pg_advisory_unlock_all()');
    session.release();
  });

  // Catches: renewLeases keeping the old key (`owner_lock = j.owner_lock` in queue/sql/lease.ts).
  it('a half-open blip: the renewal records the new key, so the old session ending takes nothing', async () => {
    const oldSession = await db.pool.connect();
    const newSession = await db.pool.connect();
    try {
      await oldSession.query('SELECT pg_advisory_lock($1, $2)', [0x48524c44, 6001]);
      await q.enqueueMany([{ kind: 'a' }, { kind: 'b' }]);
      const jobs = await q.claim({ worker: 'half', limit: 2, ownerLock: 6001, leaseMs: 60_000 });
      // The worker's side was cut: the old session lives on with key 6001, the reconnect takes 6002.
      await newSession.query('SELECT pg_advisory_lock($1, $2)', [0x48524c44, 6002]);
      const { held } = await q.heartbeat('half', jobs, 60_000, 6002);
      expect(held.size).toBe(2);
      // The old session ends: its key vanishes, and no job is the reaper's to shorten or take.
      await oldSession.query('SELECT pg_advisory_unlock_all()');
      expect(await q.reap()).toMatchObject({ requeued: 0, orphans: 0 });
      const { rows } = await db.pool.query(`SELECT owner_lock FROM herald.jobs WHERE id = ANY($1)`, [jobs.map((j) => j.id)]);
      expect(rows).toEqual([{ owner_lock: 6002 }, { owner_lock: 6002 }]);
      // A renewal while the listener is down (no key) leaves the jobs to their leases alone.
      await q.heartbeat('half', jobs, 60_000, null);
      await newSession.query('SELECT pg_advisory_unlock_all()');
      expect(await q.reap()).toMatchObject({ requeued: 0, orphans: 0 });
    } finally {
      await newSession.query('SELECT pg_advisory_unlock_all()');
      oldSession.release();
      newSession.release();
    }
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
