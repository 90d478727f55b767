// The NOTIFYs the core sends against real PostgreSQL: one per queue per statement, none on
// rollback, and each wake-up on the channel whose listeners need it.
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { waitFor } from '../test/support/wait.ts';

const db = useTestDatabase({ backoffBaseMs: 1000, backoffMaxMs: 60_000 }, { truncate: ['herald.jobs', 'herald.job_events'] });
const q = db.queue;

const W = 'host:1:aaaa';
const MARKER = 'test-marker';

describe('notifications', () => {
  async function collect(fn: () => Promise<unknown>) {
    const client = await db.pool.connect();
    const got: { channel: string; payload?: string }[] = [];
    client.on('notification', (n) => got.push({ channel: n.channel, payload: n.payload }));
    await client.query('LISTEN herald_jobs; LISTEN herald_events; LISTEN herald_control');
    try {
      await fn();
      // PostgreSQL delivers notifications in commit order: once a marker sent after fn arrives,
      // every notification fn's transactions sent has arrived too, and no late one can follow.
      await db.pool.query(`SELECT pg_notify('herald_control', '${MARKER}')`);
      await waitFor(() => got.some((n) => n.payload === MARKER), { what: 'the marker notification' });
    } finally {
      await client.query('UNLISTEN *');
      client.removeAllListeners('notification');
      client.release();
    }
    return got.filter((n) => n.payload !== MARKER);
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

  // Catches: the trigger's wake CTE without `OR c.type = 'promoted'` (a queued → queued change woke nobody).
  it('run now wakes the queue at once, as a new job would', async () => {
    const { job } = await q.enqueue({ kind: 'x', queue: 'later', runAt: new Date(Date.now() + 3_600_000) });
    const got = await collect(() => q.runNow(job.id));
    expect(got.filter((n) => n.channel === 'herald_jobs').map((n) => n.payload)).toEqual(['later']);
  });
});
