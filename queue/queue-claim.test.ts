// Claiming against real PostgreSQL: order, requirements and queues, what a claim sets, and each
// job claimed exactly once across connections.
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';

const db = useTestDatabase({ backoffBaseMs: 1000, backoffMaxMs: 60_000 }, { truncate: ['herald.jobs', 'herald.job_events'] });
const q = db.queue;

const W = 'host:1:aaaa';

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
