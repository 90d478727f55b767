// The order the tailer hands events out in is the feed's, (tx, id): neither the ids' order nor
// the commits'. A transaction that took its id first but writes its events last (so they get the
// higher ids) comes first, even when the other one committed before it. Every read the tailer makes
// is recorded (its position before, the rows it got), so a failure shows which read went wrong.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { compareCursor, formatCursor, parseCursor, type Cursor } from '../../queue/cursor.ts';
import type { JobEvent } from '../../queue/job.ts';
import { createTestDatabase, type TestDatabase } from '../../test/support/db.ts';
import { waitFor } from '../../test/support/wait.ts';
import { Fanout } from './fanout.ts';
import { Tailer } from './tailer.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

interface Read {
  before: string;
  rows: string[];
}

/** A tailer on the test's database whose reads are recorded, and what it published. */
async function recordedTailer() {
  const reads: Read[] = [];
  const feed = Object.assign(Object.create(db.queue) as typeof db.queue, {
    feed: async (after: Cursor, limit: number): Promise<JobEvent[]> => {
      const rows = await db.queue.feed(after, limit);
      reads.push({ before: formatCursor(after), rows: rows.map((r) => r.cursor) });
      return rows;
    },
  });
  const fanout = new Fanout();
  const published: string[] = [];
  fanout.subscribe({ filter: {}, deliver: (page) => published.push(...page.map((m) => m.event.cursor)) });
  const tailer = new Tailer(feed, fanout, { safetyMs: 60_000 });
  await tailer.start();
  /** One read begun now, to its end. */
  const read = async () => {
    tailer.wake();
    await tailer['idle'];
  };
  return { tailer, reads, published, read };
}

it('hands out a transaction that took its id first before one that wrote and committed first: (tx, id), whatever the ids', async () => {
  const { tailer, reads, published, read } = await recordedTailer();
  const low = await db.pool.connect();
  try {
    await low.query('BEGIN');
    const { rows: [{ lowTx }] } = await low.query<{ lowTx: string }>('SELECT pg_current_xact_id()::text AS "lowTx"');
    // The later transaction writes and commits while the first is open: its events get the lower ids.
    await db.queue.enqueueMany([{ kind: 'high' }, { kind: 'high' }, { kind: 'high' }]);
    await read();
    // Caught: the tailer's read without its horizon (drop `AND e.tx < (SELECT h FROM horizon)`
    // from readFeed in queue/sql/feed.ts) hands these out now, before the open transaction's.
    expect(published).toEqual([]);
    await low.query(`INSERT INTO herald.jobs (kind) SELECT 'low' FROM generate_series(1, 7)`);
    await low.query('COMMIT');

    const { rows } = await db.pool.query<{ cursor: string; kind: string }>(
      `SELECT e.tx || '.' || e.id AS cursor, e.kind FROM herald.job_events e ORDER BY e.tx, e.id`,
    );
    // The interleaving happened: the first transaction's events have the higher ids, and come first.
    expect(rows.map((r) => r.kind)).toEqual([...Array(7).fill('low'), ...Array(3).fill('high')]);
    expect(rows[0].cursor.startsWith(`${lowTx}.`)).toBe(true);
    expect(BigInt(rows[0].cursor.split('.')[1])).toBeGreaterThan(BigInt(rows[9].cursor.split('.')[1]));

    // Other test files' transactions (their own databases) may hold a read back until the tailer
    // has told them apart: read until it has everything.
    await waitFor(async () => {
      await read();
      return published.length >= rows.length;
    }, { what: 'the tailer to publish every event' });
    // Caught: readFeed ordered by id alone (`ORDER BY e.id`): the later transaction's come first.
    expect(published).toEqual(rows.map((r) => r.cursor));
    // Each read starts where the one before it ended, and hands out its rows in (tx, id) order.
    let at = reads[0].before;
    for (const r of reads) {
      expect(r.before).toBe(at);
      for (const c of r.rows) {
        expect(compareCursor(parseCursor(c), parseCursor(at))).toBe(1);
        at = c;
      }
    }
  } finally {
    await low.query('ROLLBACK').catch(() => {});
    low.release();
    await tailer.stop();
  }
});
