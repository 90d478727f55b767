// Queue history against real PostgreSQL: the rollup counts each event once, into the minute it
// happened; waits come out as percentiles; depth is recorded; only one process writes at a time.
import pg from 'pg';
import { beforeEach, describe, expect, inject, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { rollupAll } from '../test/support/history.ts';
import { percentile, toBuckets } from './history.ts';
import { HISTORY_KEY, LOCK_NAMESPACE } from './locks.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events', 'herald.queue_stats'] });
const q = db.queue;
beforeEach(async () => {
  await db.pool.query(`UPDATE herald.stats_cursor SET tx = '0', event_id = 0`);
});

const MIN = 60_000;
const T0 = Date.parse('2030-01-01T10:00:00Z');

/** Enqueues n jobs, claims `claim` of them and completes or fails them; returns the jobs. */
async function work(queue: string, n: number, outcome: ('ok' | 'fail' | 'run')[]) {
  const made = await q.enqueueMany(Array.from({ length: n }, () => ({ kind: 'k', queue, maxAttempts: 1 })));
  const claimed = await q.claim({ worker: 'w', queues: [queue], limit: outcome.length });
  const ok = claimed.filter((_, i) => outcome[i] === 'ok');
  const bad = claimed.filter((_, i) => outcome[i] === 'fail');
  await q.complete('w', ok.map((j) => ({ id: j.id, attempt: j.attempt, result: null })));
  await q.fail('w', bad.map((j) => ({ id: j.id, attempt: j.attempt, error: 'x' })));
  return made.map((m) => m.job.id);
}

/** Moves a queue's events into the minute at `at`, and sets every claim's wait. */
async function placeEvents(queue: string, at: number, lagMs?: (i: number) => number) {
  await db.pool.query(`UPDATE herald.job_events SET at = $2 WHERE queue = $1`, [queue, new Date(at)]);
  if (lagMs) {
    const { rows } = await db.pool.query(`SELECT id FROM herald.job_events WHERE queue = $1 AND type = 'claimed' ORDER BY id`, [queue]);
    for (const [i, r] of rows.entries()) {
      await db.pool.query(`UPDATE herald.job_events SET data = data || jsonb_build_object('lagMs', $2::int) WHERE id = $1`, [r.id, lagMs(i)]);
    }
  }
}

const rollup = () => rollupAll(q, db.pool);

const stats = async () =>
  (await db.pool.query(`SELECT queue, at, enqueued, started, succeeded, failed, wait_hist FROM herald.queue_stats WHERE enqueued + started > 0 ORDER BY queue, at`)).rows;

describe('rollup', () => {
  it('counts enqueued, started, succeeded and failed per queue and minute, each event once', async () => {
    await work('a', 10, ['ok', 'ok', 'ok', 'fail', 'run']);
    await placeEvents('a', T0 + 5_000);
    await work('b', 3, ['ok']);
    await placeEvents('b', T0 + MIN + 59_000);
    await rollup();
    const rows = await stats();
    expect(rows.map(({ wait_hist: _, ...r }) => r)).toEqual([
      { queue: 'a', at: new Date(T0), enqueued: 10, started: 5, succeeded: 3, failed: 1 },
      { queue: 'b', at: new Date(T0 + MIN), enqueued: 3, started: 1, succeeded: 1, failed: 0 },
    ]);
    // Nothing new: nothing added. New events add to the same minute.
    await q.rollupHistory();
    expect(await stats()).toEqual(rows);
    await work('c', 2, ['ok']);
    await placeEvents('c', T0);
    await db.pool.query(`UPDATE herald.job_events SET queue = 'a' WHERE queue = 'c'`);
    await rollup();
    expect((await stats())[0]).toMatchObject({ queue: 'a', enqueued: 12, started: 6, succeeded: 4, failed: 1 });
  });

  it('works through a backlog in batches without losing or repeating an event', async () => {
    await work('a', 250, Array(100).fill('ok'));
    await placeEvents('a', T0);
    for (;;) {
      await q.rollupHistory(7);
      const [row] = await stats();
      if (row?.succeeded === 100) break;
    }
    expect(await stats()).toMatchObject([{ enqueued: 250, started: 100, succeeded: 100 }]);
  });

  it("is not held back by another database's open transaction, and is by one of its own", async () => {
    const other = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await other.connect();
    const own = await db.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()'); // an xid: the cluster's xmin stays below it
      await work('a', 3, ['ok']);
      await placeEvents('a', T0);
      await rollup(); // reaches the newest event while that transaction is open
      expect(await stats()).toMatchObject([{ queue: 'a', enqueued: 3, started: 1, succeeded: 1 }]);
      // One of this database's own holds back what committed after it began, as the feed does.
      await own.query('BEGIN');
      await own.query(`INSERT INTO herald.jobs (kind, queue) VALUES ('k', 'b')`);
      await q.enqueue({ kind: 'k', queue: 'c' });
      await placeEvents('c', T0);
      await q.rollupHistory();
      expect((await stats()).map((r) => r.queue)).toEqual(['a']);
      await own.query('COMMIT');
      await placeEvents('b', T0);
      await rollup();
      expect((await stats()).map((r) => [r.queue, r.enqueued])).toEqual([['a', 3], ['b', 1], ['c', 1]]);
    } finally {
      await own.query('ROLLBACK').catch(() => {});
      own.release();
      await other.end();
    }
  });

  it('turns waits into p50 and p95 per bucket, merging minutes', async () => {
    await work('a', 100, Array(100).fill('ok'));
    // 1..100 ms in the first minute, 1000 ms for 100 more in the next.
    await placeEvents('a', T0, (i) => i + 1);
    await work('b', 100, Array(100).fill('ok'));
    await placeEvents('b', T0 + MIN, () => 1000);
    await db.pool.query(`UPDATE herald.job_events SET queue = 'a'`);
    await rollup();
    const h = await q.history('a', '1h', T0 + 2 * MIN);
    expect(h).toHaveLength(60);
    const [m0, m1] = h.slice(-3, -1);
    expect(m0).toMatchObject({ at: new Date(T0).toISOString(), started: 100 });
    // Bins are about ±9% wide.
    expect(m0.waitP50Ms).toBeGreaterThan(50 * 0.9);
    expect(m0.waitP50Ms).toBeLessThan(50 * 1.1);
    expect(m0.waitP95Ms).toBeGreaterThan(95 * 0.9);
    expect(m0.waitP95Ms).toBeLessThan(95 * 1.1);
    expect(m1.waitP50Ms).toBeGreaterThan(900);
    expect(m1.waitP50Ms).toBeLessThan(1100);
    // A 15-minute bucket holds both minutes: p50 at the top of the first, p95 in the second.
    const day = await q.history('a', '24h', T0 + 2 * MIN);
    expect(day).toHaveLength(96);
    const b = day.find((x) => x.at === new Date(T0).toISOString())!;
    expect(b).toMatchObject({ enqueued: 200, started: 200, succeeded: 200 });
    expect(b.waitP50Ms).toBeGreaterThan(90);
    expect(b.waitP50Ms).toBeLessThan(110);
    expect(b.waitP95Ms).toBeGreaterThan(900);
    const week = await q.history('a', '7d', T0 + 2 * MIN);
    expect(week).toHaveLength(168);
    expect(week.at(-1)).toMatchObject({ at: new Date(T0).toISOString(), started: 200 });
  });

  it('records the depth of each queue in the current minute, 0 for a drained queue', async () => {
    // A rollup (it can wait for other databases' transactions) that began in one minute and
    // ended in the next is run again, so "now" below is the minute it wrote.
    const rollupInOneMinute = async (): Promise<number> => {
      for (;;) {
        const before = Math.floor(Date.now() / MIN);
        await rollup();
        const now = Date.now();
        if (Math.floor(now / MIN) === before) return now;
      }
    };
    await work('a', 5, ['ok']);
    let h = await q.history('a', '1h', await rollupInOneMinute());
    expect(h.at(-1)?.depth).toBe(4);
    await q.claim({ worker: 'w', queues: ['a'], limit: 10 });
    h = await q.history('a', '1h', await rollupInOneMinute());
    expect(h.at(-1)?.depth).toBe(0);
    // Minutes nobody rolled up have no depth.
    expect(h[0].depth).toBeNull();
  });
});

describe('one writer', () => {
  it('skips the rollup while another process holds it, and concurrent rollups count each event once', async () => {
    await work('a', 300, Array(300).fill('ok'));
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_NAMESPACE, HISTORY_KEY]);
      expect(await q.rollupHistory()).toBeNull();
      expect(await stats()).toEqual([]);
      await other.query('COMMIT');
    } finally {
      await other.end();
    }
    // Four at once, in small batches so they interleave: the totals are exact.
    await Promise.all([q.rollupHistory(50), q.rollupHistory(50), q.rollupHistory(50), q.rollupHistory(50)]);
    await rollup();
    const rows = await db.pool.query(`SELECT sum(enqueued)::int AS e, sum(started)::int AS s, sum(succeeded)::int AS ok FROM herald.queue_stats`);
    expect(rows.rows[0]).toEqual({ e: 300, s: 300, ok: 300 });
  });
});

describe('percentiles and buckets', () => {
  it('reads quantiles off a histogram, and null for none', () => {
    expect(percentile([], 0.5)).toBeNull();
    expect(percentile([0, 0, 0], 0.5)).toBeNull();
    // 10 waits in bin 0 (under 0.19 ms), 90 in bin 40 (1023-1217 ms).
    const h = [10, ...Array(39).fill(0), 90];
    expect(percentile(h, 0.05)).toBeLessThan(1);
    expect(percentile(h, 0.5)).toBeGreaterThan(1023);
    expect(percentile(h, 0.5)).toBeLessThan(1217);
  });

  it('fills every bucket of the range', () => {
    const b = toBuckets([], '24h', T0 + 7 * MIN);
    expect(b).toHaveLength(96);
    expect(b.at(-1)!.at).toBe(new Date(T0).toISOString());
    expect(b[0]).toEqual({ at: new Date(T0 - 95 * 15 * MIN).toISOString(), enqueued: 0, started: 0, succeeded: 0, failed: 0, waitP50Ms: null, waitP95Ms: null, depth: null });
  });
});
