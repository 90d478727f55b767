// The event feed is gap-free: transactions that commit out of id order are still read once each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { START, compareCursor, parseCursor, type Cursor } from './cursor.ts';
import type { JobEvent } from './job.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 20 });
});
afterAll(() => db.drop());

// The horizon is cluster-wide: a transaction in another database (a parallel test file, or another
// run on a shared server) can hold it back. The feed is then late, never lossy: wait until it passes.
async function waitForHorizon(): Promise<void> {
  const { rows: mark } = await db.pool.query('SELECT pg_current_xact_id()::text AS x');
  for (;;) {
    const { rows } = await db.pool.query('SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8 AS passed', [mark[0].x]);
    if (rows[0].passed) return;
    await new Promise((r) => setTimeout(r, 20));
  }
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
    const received: JobEvent[] = [];
    let cursor = from;
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const page = await drain(cursor);
        received.push(...page.events);
        cursor = page.cursor;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    // 12 writers, each running transactions of random length that commit in random order.
    await Promise.all(
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
    writing = false;
    await reader;
    await waitForHorizon();
    const rest = await drain(cursor);
    received.push(...rest.events);

    const { rows } = await db.pool.query(
      `SELECT e.id::text AS id FROM herald.job_events e WHERE (e.tx, e.id) > ($1::xid8, $2::bigint) ORDER BY e.id`,
      [from.tx, from.id],
    );
    const ids = received.map((e) => e.eventId);
    expect(new Set(ids).size).toBe(ids.length); // no duplicate
    expect([...ids].sort((x, y) => Number(x) - Number(y))).toEqual(rows.map((r) => r.id)); // no gap
    // Delivered in cursor order.
    for (let i = 1; i < received.length; i++) {
      expect(compareCursor(parseCursor(received[i - 1].cursor), parseCursor(received[i].cursor))).toBeLessThan(0);
    }
  });

  it('filters a replay by job or by queue', async () => {
    const { job } = await db.queue.enqueue({ kind: 'solo', queue: 'filtered' });
    await db.queue.enqueue({ kind: 'other', queue: 'elsewhere' });
    const byJob = await db.queue.feed(START, 1000, { jobId: job.id });
    expect(byJob.map((e) => e.jobId)).toEqual([job.id]);
    const byQueue = await db.queue.feed(START, 1000, { queue: 'filtered' });
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
