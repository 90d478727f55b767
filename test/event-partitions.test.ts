// The event log is partitioned by transaction id (drizzle/0021_event_partitions.sql, 0025): the
// maintainer keeps partitions ahead, retention drops whole partitions (keeping the events of jobs
// that still exist, copied out before the drop's lock) and moves the retention horizon, inserts
// never fail for lack of a partition, and a maintainer that cannot have its locks at once gives up
// without holding writers back.
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { formatCursor } from '../queue/cursor.ts';
import { openStream, testServer, type TestServer } from './server-support.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { lockWaitersReach, lockWaitsHold, pidOf, type LockWait } from './support/lock-waiters.ts';
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { rollupAll } from './support/history.ts';
import { waitFor } from './support/wait.ts';

let db: TestDatabase | undefined;
let s: TestServer | undefined;
afterEach(async () => {
  await s?.close();
  await db?.drop();
  s = db = undefined;
});

const DEFAULT_PART = 'herald.job_events_default';

/** The partitions holding a job's events. */
async function partitionsOf(pool: pg.Pool, jobId: string): Promise<string[]> {
  const { rows } = await pool.query<{ p: string }>(
    `SELECT DISTINCT tableoid::regclass::text AS p FROM herald.job_events WHERE job_id = $1 ORDER BY 1`, [jobId]);
  return rows.map((r) => r.p);
}

async function partitions(pool: pg.Pool): Promise<{ part: string; lo: string; hi: string }[]> {
  return (await pool.query(`SELECT part::text, lo::text, hi::text FROM herald.event_partitions() ORDER BY lo`)).rows;
}

/** Uses transaction ids (one subtransaction each) until the next one to be assigned is past `hi`. */
async function burnXidsTo(pool: pg.Pool, hi: bigint): Promise<void> {
  await pool.query(`
    DO $$ BEGIN
      CREATE TEMP TABLE burn (x int) ON COMMIT DROP;
      FOR i IN 1 .. greatest(${hi} - pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 1, 0) LOOP
        BEGIN INSERT INTO burn VALUES (i); EXCEPTION WHEN others THEN NULL; END;
      END LOOP;
    END $$`);
}

/** A Queue on a pool of its own, named `name` in pg_stat_activity; ended after the test. */
const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
});
function named(name: string): Queue {
  const pool = createPool(db!.url, { max: 2, applicationName: name });
  pools.push(pool);
  return new Queue(pool);
}

/**
 * Runs `maintain` while the reader blocks it, and an enqueue of `writer` after it; returns once
 * both ended, having seen the writer queued behind the maintainer (pg_blocking_pids) before the
 * maintainer gave up. The lock timeout must outlast that look: when the maintainer gives up first
 * (a loaded machine), it runs again with a longer one. The interleaving is seen, never assumed.
 */
async function writerQueuedBehind(readerPid: number, writer: Queue, maintain: (lockMs: number) => Promise<number>) {
  for (let lockMs = 2_000; lockMs <= 32_000; lockMs *= 2) {
    let settled = false;
    const maintaining = maintain(lockMs).finally(() => (settled = true));
    const seen = (waits: LockWait) => waitFor(async () => ((await lockWaitsHold(db!.pool, waits)) ? 'seen' : settled && 'late'), { what: 'a wait, or the maintainer to end' });
    if ((await seen({ waiter: { app: 'maintainer' }, holder: readerPid })) === 'late') {
      await maintaining;
      continue;
    }
    const writing = writer.enqueue({ kind: 'k' });
    const queued = await seen({ waiter: { app: 'writer' }, holder: { app: 'maintainer' } });
    const [result, { job }] = await Promise.all([maintaining, writing]);
    if (queued === 'seen') return { maintainer: result, job };
  }
  throw new Error('the maintainer gave up before the writer was seen waiting for it, even with a 32 s lock timeout');
}

describe('event partitions', () => {
  it('the maintainer keeps partitions ahead, and new events land in them', async () => {
    db = await createTestDatabase();
    const before = await partitions(db.pool);
    expect(await db.queue.prepareEventPartitions({ width: 1000n, lead: 5000n, slackXids: 1 })).toBeGreaterThanOrEqual(5);
    const { job } = await db.queue.enqueue({ kind: 'k' });
    const [part] = await partitionsOf(db.pool, job.id);
    expect(part).not.toBe(DEFAULT_PART);
    expect(before.map((p) => p.part)).not.toContain(part);
    // Again at once: enough lies ahead, nothing to add.
    expect(await db.queue.prepareEventPartitions({ width: 1000n, lead: 1000n, slackXids: 1 })).toBe(0);
  });

  it('inserts land in the default partition when the maintainer never ran or fell behind, and it starts above them', async () => {
    db = await createTestDatabase();
    const { job: first } = await db.queue.enqueue({ kind: 'k' });
    await db.queue.cancel(first.id);
    expect(await partitionsOf(db.pool, first.id)).toEqual([DEFAULT_PART]);
    // Partitions ahead, then transactions run past them all: the overflow goes to the default again.
    expect(await db.queue.prepareEventPartitions({ width: 10n, lead: 10n, slackXids: 1 })).toBeGreaterThan(0);
    const top = BigInt((await partitions(db.pool)).at(-1)!.hi);
    await burnXidsTo(db.pool, top);
    const { job: late } = await db.queue.enqueue({ kind: 'k' });
    expect(await partitionsOf(db.pool, late.id)).toEqual([DEFAULT_PART]);
    // The next pass skips the range the default partition holds rows of.
    expect(await db.queue.prepareEventPartitions({ width: 1000n, lead: 5000n, slackXids: 1 })).toBeGreaterThan(0);
    const { job: next } = await db.queue.enqueue({ kind: 'k' });
    expect(await partitionsOf(db.pool, next.id)).not.toEqual([DEFAULT_PART]);
    // Row-by-row retention still empties the default partition: the job that ended there goes.
    expect(await db.queue.cleanup(0)).toBe(1);
    expect(await partitionsOf(db.pool, first.id)).toEqual([]);
    expect(await partitionsOf(db.pool, late.id)).toEqual([DEFAULT_PART]);
  });

  it('retention drops a whole partition, keeps the events of jobs that still exist, and moves the horizon', async () => {
    db = await createTestDatabase();
    const q = db.queue;
    await q.prepareEventPartitions({ width: 1000n, lead: 100_000n, slackXids: 1 });
    const { job: kept } = await q.enqueue({ kind: 'k', queue: 'kept' });
    const { job: gone } = await q.enqueue({ kind: 'k', queue: 'gone' });
    await q.cancel(gone.id);
    const [part] = await partitionsOf(db.pool, gone.id);
    expect(part).not.toBe(DEFAULT_PART);
    const lastGone = (await db.pool.query(`SELECT tx::text, id::text FROM herald.job_events WHERE job_id = $1 ORDER BY tx DESC, id DESC LIMIT 1`, [gone.id])).rows[0];
    const hi = BigInt((await partitions(db.pool)).find((p) => p.part === part)!.hi);
    await burnXidsTo(db.pool, hi);
    await waitFor(async () => {
      await rollupAll(q, db!.pool); // history reads them first
      await q.cleanup(0);
      return (await db!.pool.query(`SELECT to_regclass($1) IS NULL AS dropped`, [part])).rows[0].dropped;
    }, { what: `retention to drop ${part}`, everyMs: 50 });
    // No row of it was deleted: the table is gone. The job that still exists keeps its events.
    expect(await partitionsOf(db.pool, gone.id)).toEqual([]);
    expect(await partitionsOf(db.pool, kept.id)).toEqual([DEFAULT_PART]);
    const horizon = await q.retentionHorizon();
    expect(BigInt(horizon.tx) > BigInt(lastGone.tx) || (horizon.tx === lastGone.tx && BigInt(horizon.id) >= BigInt(lastGone.id))).toBe(true);
    expect(BigInt(horizon.tx)).toBeLessThan(hi);
    // The SSE rule: a resume from below the horizon starts with a reset, one from it does not.
    s = await testServer({ db, listen: true });
    const stale = await openStream(`${s.url}/api/events?lastEventId=0`);
    await waitFor(() => stale.messages.length >= 2, { what: 'the stale stream to get the reset and the kept job' });
    expect(stale.messages[0]).toMatchObject({ event: 'reset' });
    expect(stale.messages[1].json).toMatchObject({ jobId: kept.id, type: 'enqueued' });
    await stale.close();
    const fresh = await openStream(`${s.url}/api/events?lastEventId=${formatCursor(horizon)}`);
    const { job: after } = await q.enqueue({ kind: 'k', queue: 'after' });
    await waitFor(() => fresh.messages.some((m) => m.json?.jobId === after.id), { what: 'the fresh stream to get the new job' });
    expect(fresh.messages.map((m) => m.event)).toEqual(['job']);
    await fresh.close();
  });

  it('a drop copies the kept events out before its lock: writers and readers go on during the copy, and it locks for catalog work only', async () => {
    db = await createTestDatabase();
    const q = db.queue;
    await q.prepareEventPartitions({ width: 1000n, lead: 100_000n, slackXids: 1 });
    expect(await q.dropEventPartitions(0)).toBe(1); // the migration's first partition, empty: out of the way
    const { job: bulkDeleted } = await q.enqueue({ kind: 'k', queue: 'bulk' });
    await q.cancel(bulkDeleted.id);
    const queued = [];
    for (let i = 0; i < 12; i++) queued.push((await q.enqueue({ kind: 'k', queue: 'kept' })).job);
    const { job: held } = await q.enqueue({ kind: 'k', queue: 'held' });
    await q.cancel(held.id); // finished, not yet retention's: kept, and locked by the copy
    for (let i = 0; i < 6; i++) await q.cancel((await q.enqueue({ kind: 'k', queue: 'gone' })).job.id);
    await db.pool.query(`DELETE FROM herald.jobs WHERE queue = 'gone'`); // as retention does: their events stay
    const [part] = await partitionsOf(db.pool, held.id);
    expect(await partitionsOf(db.pool, bulkDeleted.id)).toEqual([part]);
    const oldEvents = (await db.pool.query(`SELECT count(*)::int AS n FROM ${part}`)).rows[0].n;
    const hi = BigInt((await partitions(db.pool)).find((p) => p.part === part)!.hi);
    await burnXidsTo(db.pool, hi);
    await waitFor(async () => {
      await rollupAll(q, db!.pool);
      return (await db!.pool.query(`SELECT part::text FROM herald.due_event_partition(now())`)).rows[0]?.part === part;
    }, { what: `${part} to be due`, everyMs: 50 });
    const locker = await db.pool.connect();
    let dropping: Promise<number> | undefined;
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [held.id]);
      // Batches of 5 events read: the copy waits on the held job in its third batch, two in.
      dropping = q.dropEventPartitions(0, 60_000, { batch: 5, small: 3 });
      await lockWaitersReach(db.pool, { waiter: { app: 'herald' }, holder: await pidOf(locker) });
      expect(Number((await db.pool.query(`SELECT count(*) FROM herald.job_events_staging`)).rows[0].count)).toBe(10);
      // Nobody holds the log exclusively; writers and a reader of the whole log go on meanwhile.
      // pg_locks is cluster-wide, and a test database cloned from the template has the same oids:
      // another file's maintainer may hold its own log at this moment.
      const exclusive = await db.pool.query(
        `SELECT 1 FROM pg_locks WHERE relation = 'herald.job_events'::regclass AND mode = 'AccessExclusiveLock'
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      expect(exclusive.rowCount).toBe(0);
      await q.cancel(queued[0].id); // a new event of a kept job, in a newer partition
      // A job deleted after its batch was copied: its copies in the staging go with it.
      expect((await q.bulk('delete', { queue: 'bulk' })).affected).toBe(1);
      expect(Number((await db.pool.query(`SELECT count(*) FROM herald.job_events_staging`)).rows[0].count)).toBe(8);
      const { job: fresh } = await q.enqueue({ kind: 'k', queue: 'fresh' });
      expect((await db.pool.query(`SELECT count(*)::int AS n FROM herald.job_events WHERE job_id = $1`, [fresh.id])).rows[0].n).toBe(1);
    } finally {
      await locker.query('COMMIT');
      locker.release();
      await dropping?.catch(() => {}); // settled before a failed step's teardown ends the pool
    }
    expect(await dropping).toBe(1);
    expect((await db.pool.query(`SELECT to_regclass($1) AS p`, [part])).rows[0].p).toBeNull();
    // The kept events sit in a partition of the dropped range, each once, in (tx, id) order with the rest.
    const kept = (await partitions(db.pool)).find((p) => p.part.startsWith('herald.job_events_kept_'))!;
    expect(await partitionsOf(db.pool, held.id)).toEqual([kept.part]);
    expect(await partitionsOf(db.pool, bulkDeleted.id)).not.toContain(kept.part); // only its 'deleted' event is left, in a newer partition
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM ${kept.part}`)).rows[0].n).toBe(oldEvents - 14); // not the 7 jobs gone
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM herald.job_events WHERE queue = 'gone'`)).rows[0].n).toBe(0);
    const timeline = (await db.pool.query(`SELECT type FROM herald.job_events WHERE job_id = $1 ORDER BY tx, id`, [queued[0].id])).rows;
    expect(timeline.map((r) => r.type)).toEqual(['enqueued', 'cancelled']);
    expect(Number((await db.pool.query(`SELECT count(*) FROM herald.job_events_staging`)).rows[0].count)).toBe(0);
    const horizon = await q.retentionHorizon();
    expect(BigInt(horizon.tx)).toBeLessThan(hi);
    expect(BigInt(horizon.tx)).toBeGreaterThanOrEqual(BigInt((await db.pool.query(`SELECT max(tx)::text AS t FROM ${kept.part}`)).rows[0].t));
    // Retention deletes kept events row by row with their jobs; the few left go to the default partition.
    expect(await q.cleanup(0)).toBe(2);
    expect((await db.pool.query(`SELECT to_regclass($1) AS p`, [kept.part])).rows[0].p).toBeNull();
    expect(await partitionsOf(db.pool, held.id)).toEqual([]);
    expect(await partitionsOf(db.pool, bulkDeleted.id)).not.toContain(DEFAULT_PART); // only its 'deleted' event, in a newer partition
    expect(await partitionsOf(db.pool, queued[1].id)).toEqual([DEFAULT_PART]);
  });

  it('a maintainer that cannot have its locks gives up within its lock timeout, holds no writer back, and succeeds next pass', async () => {
    db = await createTestDatabase();
    const q = db.queue;
    const maintainer = named('maintainer');
    const writer = named('writer');
    // The migration's first partition, empty here and closed: due for retention at once.
    const first = (await partitions(db.pool))[0].part;
    const reader = await db.pool.connect();
    try {
      await reader.query('BEGIN');
      await reader.query('SELECT count(*) FROM herald.job_events'); // a long reader: every partition locked
      const readerPid = await pidOf(reader);
      // A writer that comes while the maintainer waits queues behind it only until it gives up,
      // not until the reader ends: both finish while the reader is still open. Caught:
      // stage_event_partition without its lock_timeout (the writer waits with it for the reader).
      const drop = await writerQueuedBehind(readerPid, writer, (lockMs) => maintainer.dropEventPartitions(0, lockMs));
      expect(drop.maintainer).toBe(0);
      expect(await partitionsOf(db.pool, drop.job.id)).toEqual([DEFAULT_PART]);
      const add = await writerQueuedBehind(readerPid, writer, (lockMs) =>
        maintainer.prepareEventPartitions({ width: 1000n, lead: 1000n, slackXids: 1, lockMs }));
      expect(add.maintainer).toBe(-1);
      expect((await db.pool.query(`SELECT to_regclass($1) AS p`, [first])).rows[0].p).not.toBeNull();
    } finally {
      await reader.query('COMMIT');
      reader.release();
    }
    expect(await q.dropEventPartitions(0, 200)).toBeGreaterThanOrEqual(1);
    expect((await db.pool.query(`SELECT to_regclass($1) AS p`, [first])).rows[0].p).toBeNull();
    expect(await q.prepareEventPartitions({ width: 1000n, lead: 1000n, slackXids: 1, lockMs: 200 })).toBeGreaterThan(0);
  });

  it('two maintainers at once: one adds the partitions, the other skips', async () => {
    db = await createTestDatabase();
    const one = named('maintainer-1');
    const two = named('maintainer-2');
    const reader = await db.pool.connect();
    try {
      // The reader holds the default partition, which attaching a partition must lock: the first
      // maintainer stops there, holding the maintainers' key.
      await reader.query('BEGIN');
      await reader.query('SELECT count(*) FROM herald.job_events');
      const adding = one.prepareEventPartitions({ width: 1000n, lead: 1000n, slackXids: 1, lockMs: 60_000 });
      await lockWaitersReach(db.pool, { waiter: { app: 'maintainer-1' }, holder: await pidOf(reader) });
      // Lock timeouts of a minute: an answer now is the skip, never a lock given up on. Caught:
      // add_event_partitions taking the key with pg_try_advisory_xact_lock_shared (both go on,
      // and the second waits for the first one's new partition: this test times out).
      expect(await two.prepareEventPartitions({ width: 1000n, lead: 1000n, slackXids: 1, lockMs: 60_000 })).toBe(-1);
      expect(await two.dropEventPartitions(0, 60_000)).toBe(0);
      await reader.query('COMMIT');
      expect(await adding).toBeGreaterThan(0);
    } finally {
      await reader.query('ROLLBACK').catch(() => {});
      reader.release();
    }
    expect(await two.prepareEventPartitions({ width: 1000n, lead: 1000n, slackXids: 1 })).toBeGreaterThanOrEqual(0); // the key is free again
    // A maintainer from before the staged drops, during an upgrade: always busy, it drops nothing.
    expect((await db.pool.query(`SELECT herald.drop_event_partition(now(), 100) AS r`)).rows[0].r).toBe(-1);
  });
});
