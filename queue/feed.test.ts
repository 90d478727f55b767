// The event feed is gap-free: transactions that commit out of id order are still read once each,
// and its horizon waits only on transactions that can write this database's events.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { START, compareCursor, parseCursor, type Cursor } from './cursor.ts';
import type { JobEvent } from './job.ts';
import { waitFor } from '../test/support/wait.ts';

let db: TestDatabase;
/** Prepared transactions need max_prepared_transactions > 0 (the test cluster sets it; a server may not). */
let prepared = false;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 20 });
  prepared = Number((await db.pool.query('SHOW max_prepared_transactions')).rows[0].max_prepared_transactions) > 0;
});
afterAll(() => db.drop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A session on another database of the same cluster. */
async function otherDatabase(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: inject('pgAdminUrl'), application_name: 'feed-test:other-db' });
  await c.connect();
  return c;
}

/**
 * Nothing holds the feed back past `start`. On a shared cluster another database's short
 * transaction can hold the horizon for a moment (CI has seen ones with no session left to name);
 * once those end, nothing does.
 */
const noHolder = (start: Cursor, what: string) => waitFor(async () => (await db.queue.feedHolder(start)) === null, { what });

// A transaction of this database that is still open (autovacuum's ANALYZE, say) holds the feed back
// for a moment: late, never lossy. Wait until every committed event lies below the horizon.
async function waitForHorizon(): Promise<void> {
  await waitFor(async () => {
    await db.queue.learnOtherDatabases(); // as the tailer does when held back
    return (await db.queue.backlog(START)) !== 'held';
  }, { what: 'every committed event to lie below the horizon', everyMs: 20 }).catch(async (err: Error) => {
    // Seen once on a shared PostgreSQL 15 under load: say who held it, for the next look.
    const { rows } = await db.pool.query(
      `SELECT pid, datname, application_name, state, backend_xid::text, now() - xact_start AS age, left(query, 80) AS query
       FROM pg_stat_activity WHERE backend_xid IS NOT NULL`,
    );
    throw new Error(`${err.message}\nholder: ${JSON.stringify(await db.queue.feedHolder(START))}\nsessions with an xid: ${JSON.stringify(rows)}`);
  });
}

/** Follows the feed from `from` in the background, as the tailer does; `stop` returns all it read, once. */
function follow(from: Cursor) {
  const received: JobEvent[] = [];
  let cursor = from;
  let running = true;
  const reader = (async () => {
    while (running) {
      // Now and then look up other databases, as a held-back tailer does: the list then goes stale.
      if (Math.random() < 0.3) await db.queue.learnOtherDatabases();
      const page = await drain(cursor);
      received.push(...page.events);
      cursor = page.cursor;
      await sleep(2);
    }
  })();
  return {
    /** Stops reading without the final check (a failed test: nothing may run on after the pool ends). */
    async halt(): Promise<void> {
      running = false;
      await reader.catch(() => {});
    },
    async stop(): Promise<JobEvent[]> {
      running = false;
      await reader;
      await waitForHorizon();
      received.push(...(await drain(cursor)).events);
      return received;
    },
  };
}

/** `received` holds every event written after `from`, once each, in cursor order. */
async function expectExactlyOnce(from: Cursor, received: JobEvent[]): Promise<void> {
  const { rows } = await db.pool.query(
    `SELECT e.id::text AS id FROM herald.job_events e WHERE (e.tx, e.id) > ($1::xid8, $2::bigint) ORDER BY e.id`,
    [from.tx, from.id],
  );
  const ids = received.map((e) => e.eventId);
  expect(rows.length).toBeGreaterThan(0);
  expect(new Set(ids).size).toBe(ids.length); // no duplicate
  expect([...ids].sort((x, y) => Number(x) - Number(y))).toEqual(rows.map((r) => r.id)); // no gap
  for (let i = 1; i < received.length; i++) {
    expect(compareCursor(parseCursor(received[i - 1].cursor), parseCursor(received[i].cursor))).toBeLessThan(0);
  }
}

/** Drains until `test` holds for what arrived (the other transactions stay open meanwhile). */
async function drainUntil(after: Cursor, test: (events: JobEvent[]) => boolean): Promise<{ events: JobEvent[]; cursor: Cursor }> {
  const got: JobEvent[] = [];
  let cursor = after;
  await waitFor(async () => {
    await db.queue.learnOtherDatabases(); // as a held-back tailer does
    const page = await drain(cursor);
    got.push(...page.events);
    cursor = page.cursor;
    return test(got);
  }, { what: 'the feed to deliver the awaited events', everyMs: 20 });
  return { events: got, cursor };
}

async function drain(after: Cursor): Promise<{ events: JobEvent[]; cursor: Cursor }> {
  const events: JobEvent[] = [];
  let cursor = after;
  for (;;) {
    const page = await db.queue.feed(cursor, 100);
    if (page.length === 0) return { events, cursor };
    events.push(...page);
    cursor = parseCursor(page[page.length - 1].cursor);
  }
}

describe('event feed', () => {
  it('holds back a later id until the earlier transaction commits, then yields both in order', async () => {
    const start = await db.queue.head();
    const a = await db.pool.connect();
    const b = await db.pool.connect();
    await a.query('BEGIN');
    await a.query(`INSERT INTO herald.jobs (kind) VALUES ('first')`); // lower event id
    await b.query(`INSERT INTO herald.jobs (kind) VALUES ('second')`); // higher id, commits first
    const early = await drain(start);
    expect(early.events).toEqual([]); // 'second' is above the horizon while 'first' is open
    await a.query('COMMIT');
    a.release();
    b.release();
    await waitForHorizon();
    const late = await drain(early.cursor);
    expect(late.events.map((e) => e.kind)).toEqual(['first', 'second']);
    expect(Number(late.events[0].eventId)).toBeLessThan(Number(late.events[1].eventId));
  });

  it('a reader following the cursor sees every event exactly once under concurrent writers', async () => {
    const from = await db.queue.head();
    const reader = follow(from);
    // 12 writers, each running transactions of random length that commit in random order.
    const writers = Promise.all(
      Array.from({ length: 12 }, async (_, w) => {
        const c = await db.pool.connect();
        try {
          for (let i = 0; i < 25; i++) {
            await c.query('BEGIN');
            const n = 1 + Math.floor(Math.random() * 4);
            await c.query(`INSERT INTO herald.jobs (kind, queue) SELECT 'k', 'w${w}' FROM generate_series(1, ${n})`);
            await new Promise((r) => setTimeout(r, Math.random() * 8));
            await c.query(Math.random() < 0.1 ? 'ROLLBACK' : 'COMMIT');
          }
        } finally {
          c.release();
        }
      }),
    );
    await writers.catch(async (err) => {
      await reader.halt();
      throw err;
    });
    await expectExactlyOnce(from, await reader.stop());
  });

  it('a reader sees every event exactly once with savepoints, prepared transactions and other databases busy', async () => {
    const from = await db.queue.head();
    const reader = follow(from);
    let writing = true;
    // Another database churns through transactions with xids the whole time.
    const other = await otherDatabase();
    const noise = (async () => {
      while (writing) {
        await other.query('BEGIN');
        await other.query('SELECT pg_current_xact_id()');
        await sleep(Math.random() * 6);
        await other.query('COMMIT');
      }
    })();
    let gid = 0;
    const writers = Promise.all(
      Array.from({ length: 10 }, async (_, w) => {
        const c = await db.pool.connect();
        let failed: Error | undefined;
        try {
          for (let i = 0; i < 20; i++) {
            // Herald's triggers NOTIFY, which PREPARE refuses; a replica-mode session (what a logical
            // replication apply does) skips triggers, so it writes its events itself and can prepare.
            const prepare = prepared && Math.random() < 0.3;
            const insert = (n: number) =>
              prepare
                ? c.query(`INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt) SELECT 0, 'm${w}', 'p', 'enqueued', 'queued', 0 FROM generate_series(1, ${n})`)
                : c.query(`INSERT INTO herald.jobs (kind, queue) SELECT 'k', 'm${w}' FROM generate_series(1, ${n})`);
            await c.query('BEGIN');
            if (prepare) await c.query('SET LOCAL session_replication_role = replica');
            // Some transactions get their xid inside a savepoint; some savepoints roll back.
            if (Math.random() < 0.5) await c.query('SAVEPOINT a');
            await insert(1 + Math.floor(Math.random() * 3));
            await c.query('SAVEPOINT b');
            await insert(1);
            await c.query(Math.random() < 0.5 ? 'ROLLBACK TO SAVEPOINT b' : 'RELEASE SAVEPOINT b');
            await sleep(Math.random() * 8);
            const rollback = Math.random() < 0.1;
            if (prepare) {
              const name = `feed-test-${process.pid}-${gid++}`;
              await c.query(`PREPARE TRANSACTION '${name}'`);
              await sleep(Math.random() * 8);
              await c.query(`${rollback ? 'ROLLBACK' : 'COMMIT'} PREPARED '${name}'`);
            } else {
              await c.query(rollback ? 'ROLLBACK' : 'COMMIT');
            }
          }
        } catch (err) {
          failed = err as Error;
          throw err;
        } finally {
          c.release(failed);
        }
      }),
    );
    try {
      await writers;
    } catch (err) {
      await reader.halt();
      throw err;
    } finally {
      // Also when a writer failed: nothing may run on after the file's pool has ended.
      writing = false;
      await noise.catch(() => {});
      await other.end();
    }
    await expectExactlyOnce(from, await reader.stop());
  });

  it('holds back a later event behind a writer whose xid came from a savepoint, even one rolled back', async () => {
    const start = await db.queue.head();
    const a = await db.pool.connect();
    await a.query('BEGIN');
    await a.query('SAVEPOINT s');
    await a.query(`INSERT INTO herald.jobs (kind) VALUES ('sub-first')`); // the top-level xid is taken here
    await a.query('ROLLBACK TO SAVEPOINT s');
    await a.query(`INSERT INTO herald.jobs (kind) VALUES ('sub-kept')`);
    await db.pool.query(`INSERT INTO herald.jobs (kind) VALUES ('sub-later')`);
    expect((await drain(start)).events).toEqual([]);
    expect(await db.queue.backlog(start)).toBe('held');
    await a.query('COMMIT');
    a.release();
    await waitForHorizon();
    expect(await db.queue.backlog(start)).toBe('readable'); // past the cursor, no longer held
    const { events, cursor } = await drain(start);
    expect(events.map((e) => e.kind)).toEqual(['sub-kept', 'sub-later']);
    expect(await db.queue.backlog(cursor)).toBe('none');
  });

  it('does not wait for a long transaction in another database', async () => {
    const other = await otherDatabase();
    try {
      await other.query('BEGIN');
      await other.query('SAVEPOINT s');
      const { rows } = await other.query('SELECT pg_current_xact_id()::text AS x');
      const start = await db.queue.head();
      const { job } = await db.queue.enqueue({ kind: 'while-other-db-is-open' });
      // The cluster-wide xmin is stuck at (or below) the other database's xid...
      const { rows: xmin } = await db.pool.query('SELECT pg_snapshot_xmin(pg_current_snapshot()) <= $1::xid8 AS stuck', [rows[0].x]);
      expect(xmin[0].stuck).toBe(true);
      // ...and the event still arrives while that transaction stays open.
      const { events } = await drainUntil(start, (got) => got.some((e) => e.jobId === job.id));
      expect(events.filter((e) => e.jobId === job.id).map((e) => e.type)).toEqual(['enqueued']);
      // The open transaction of the other database is never named (this wait would run out); a
      // short one of any database can be, for a moment, until it ends.
      await noHolder(start, 'no holder while the other database keeps its transaction open');
    } finally {
      await other.query('ROLLBACK');
      await other.end();
    }
  });

  it('does not wait for a prepared transaction of another database', async (ctx) => {
    if (!prepared) return ctx.skip('max_prepared_transactions is 0 on this server: no prepared transactions to test');
    const other = await otherDatabase();
    const gid = `feed-test-other-${process.pid}`;
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()');
      await other.query(`PREPARE TRANSACTION '${gid}'`);
      const start = await db.queue.head();
      const { job } = await db.queue.enqueue({ kind: 'while-other-db-prepared' });
      const { events } = await drainUntil(start, (got) => got.some((e) => e.jobId === job.id));
      expect(events.filter((e) => e.jobId === job.id).map((e) => e.type)).toEqual(['enqueued']);
    } finally {
      await other.query(`ROLLBACK PREPARED '${gid}'`).catch(() => {});
      await other.end();
    }
  });

  it('waits for a prepared transaction of this database, names it, and yields its events once committed', async (ctx) => {
    if (!prepared) return ctx.skip('max_prepared_transactions is 0 on this server: no prepared transactions to test');
    const start = await db.queue.head();
    const a = await db.pool.connect();
    const gid = `feed-test-here-${process.pid}`;
    try {
      await a.query('BEGIN');
      await a.query(`SET LOCAL session_replication_role = replica`); // no NOTIFY, which PREPARE refuses
      await a.query(`INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt) VALUES (0, 'default', 'prepared-first', 'enqueued', 'queued', 0)`);
      await a.query(`PREPARE TRANSACTION '${gid}'`);
      await db.pool.query(`INSERT INTO herald.jobs (kind) VALUES ('prepared-later')`);
      expect((await drain(start)).events).toEqual([]);
      // Another short transaction below it (autovacuum's ANALYZE writes pg_statistic with an id of
      // its own) can be the holder for a moment; the prepared one is named once that has ended.
      const holder = await waitFor(async () => {
        const h = await db.queue.feedHolder(start);
        return h?.gid === gid && h;
      }, { what: 'the prepared transaction to be named as the holder' });
      expect(holder).toMatchObject({ pid: null, state: 'prepared', gid, ageMs: expect.any(Number) });
      await a.query(`COMMIT PREPARED '${gid}'`);
    } finally {
      await a.query(`ROLLBACK PREPARED '${gid}'`).catch(() => {});
      a.release();
    }
    await waitForHorizon();
    expect((await drain(start)).events.map((e) => e.kind)).toEqual(['prepared-first', 'prepared-later']);
  });

  it('names the session of this database that holds the feed back', async () => {
    const start = await db.queue.head();
    const a = new pg.Client({ connectionString: db.url, application_name: 'feed-test:long-writer' });
    await a.connect();
    try {
      const { rows } = await a.query('SELECT pg_backend_pid() AS pid');
      await noHolder(start, 'no holder before the writer begins');
      await a.query('BEGIN');
      await a.query(`INSERT INTO herald.jobs (kind) VALUES ('held-first')`);
      await db.pool.query(`INSERT INTO herald.jobs (kind) VALUES ('held-later')`);
      const holder = await db.queue.feedHolder(start);
      expect(holder).toMatchObject({
        pid: rows[0].pid,
        applicationName: 'feed-test:long-writer',
        state: 'idle in transaction',
        gid: null,
        transactionStart: expect.any(String),
        queryStart: expect.any(String),
        ageMs: expect.any(Number),
      });
      expect(Date.parse(holder!.queryStart!)).toBeGreaterThanOrEqual(Date.parse(holder!.transactionStart!));
      await a.query('COMMIT');
    } finally {
      await a.end();
    }
    await waitForHorizon();
    await noHolder(start, 'no holder once the writer committed');
  });

  it('replays exactly (after, through], whatever is open meanwhile', async () => {
    const from = await db.queue.head();
    await db.queue.enqueueMany([{ kind: 'r1' }, { kind: 'r2' }, { kind: 'r3' }]);
    await waitForHorizon();
    const through = await db.queue.head();
    const a = await db.pool.connect();
    try {
      await a.query('BEGIN');
      await a.query(`INSERT INTO herald.jobs (kind) VALUES ('open-meanwhile')`); // holds the horizon
      await db.queue.enqueue({ kind: 'after-through' });
      const page = await db.queue.feedThrough(from, through, 2);
      expect(page.map((e) => e.kind)).toEqual(['r1', 'r2']);
      const rest = await db.queue.feedThrough(parseCursor(page[1].cursor), through, 10);
      expect(rest.map((e) => e.kind)).toEqual(['r3']);
      expect(rest[0].cursor).toBe(`${through.tx}.${through.id}`);
    } finally {
      await a.query('ROLLBACK');
      a.release();
    }
  });

  it('filters a replay by job or by queue', async () => {
    const { job } = await db.queue.enqueue({ kind: 'solo', queue: 'filtered' });
    await db.queue.enqueue({ kind: 'other', queue: 'elsewhere' });
    await waitForHorizon();
    const head = await db.queue.head();
    const byJob = await db.queue.feedThrough(START, head, 1000, { jobId: job.id });
    expect(byJob.map((e) => e.jobId)).toEqual([job.id]);
    const byQueue = await db.queue.feedThrough(START, head, 1000, { queue: 'filtered' });
    expect(byQueue.map((e) => e.jobId)).toEqual([job.id]);
  });

  it('rejects a cursor it did not issue', () => {
    for (const bad of ['abc', '1', '1.', '.1', '-1.2', '1.2.3', '99999999999999999999999.1']) {
      expect(() => parseCursor(bad), bad).toThrow(/not a cursor/);
    }
    expect(parseCursor('0')).toEqual(START);
    expect(parseCursor('123.45')).toEqual({ tx: '123', id: '45' });
  });
});
