// Listing, counts and retention cleanup against real PostgreSQL.
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';

const db = useTestDatabase({ backoffBaseMs: 1000, backoffMaxMs: 60_000 }, { truncate: ['herald.jobs', 'herald.job_events'] });
const q = db.queue;

const W = 'host:1:aaaa';

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
