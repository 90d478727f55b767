// The tailer reads through Queue, so it keeps working on a connection a transaction pooler hands
// out, where a statement of the same name may already exist (42P05) or be missing (26000).
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/db.ts';
import { Fanout, type StreamMessage } from './fanout.ts';
import { Tailer } from './tailer.ts';
import { waitFor } from '../../test/support/wait.ts';

let db: TestDatabase;

beforeAll(async () => {
  // One connection, so the statement prepared below is on the connection the tailer gets.
  db = await createTestDatabase({ poolSize: 1 });
});
afterAll(() => db.drop());

/** The test database's queue as the tailer's feed, with some of its methods replaced. */
const feedWith = (replaced: Partial<typeof db.queue>) => Object.assign(Object.create(db.queue) as typeof db.queue, replaced);

it('reads on behind a pooler: a prepared statement name that already exists makes it fall back, not fail', async () => {
  // What a pooler's shared server connection looks like: another client prepared this name.
  // (One name only: the pool drops a connection after a failed query, and the PREPARE with it.)
  await db.pool.query('PREPARE herald_feed_backlog AS SELECT 1');
  const fanout = new Fanout();
  const got: StreamMessage[] = [];
  fanout.subscribe({ filter: {}, deliver: (m) => got.push(...m) });
  const tailer = new Tailer(db.queue, fanout, { safetyMs: 60_000 });
  await tailer.start();
  const { job } = await db.queue.enqueue({ kind: 'pooled' });

  // Other test files' transactions (in their own databases) may hold the first read back until the
  // tailer has told them apart; wake it until the event arrives, as NOTIFY would.
  await waitFor(async () => {
    tailer.wake();
    await tailer['idle'];
    return got.length > 0;
  }, { what: 'the tailer to deliver the first event' });

  expect(tailer.dbUp).toBe(true);
  expect(got.map((m) => m.event.jobId)).toEqual([job.id]);
  await tailer.stop();
});

it('passes the events barrier on the next read when passing it failed (the notification still asks for it)', async () => {
  let passes = 0;
  const feed = feedWith({
    // The first pass fails as a dropped connection would; the database answers the others.
    passEventsBarrier: () => (++passes === 1 ? Promise.reject(new Error('connection lost')) : db.queue.passEventsBarrier()),
  });
  const fanout = new Fanout();
  fanout.subscribe({ filter: {}, deliver: () => {} }); // a follower: ticks start reads
  const tailer = new Tailer(feed, fanout, { safetyMs: 60_000 });
  await tailer.start();
  tailer.wake(true);
  await tailer['idle'];
  expect(tailer.dbUp).toBe(false);
  tailer.wake(); // the next read, as the safety timer would start it
  await tailer['idle'];
  expect(passes).toBe(2);
  expect(tailer.dbUp).toBe(true);
  await tailer.stop();
});

it('idle while nothing follows the fan-out: ticks start no read; the first follower gets what came meanwhile', async () => {
  let reads = 0;
  const feed = feedWith({
    feed: (...args: Parameters<typeof db.queue.feed>) => (reads++, db.queue.feed(...args)),
  });
  const fanout = new Fanout();
  const tailer = new Tailer(feed, fanout, { safetyMs: 60_000 });
  await tailer.start();
  const { job } = await db.queue.enqueue({ kind: 'unwatched' });
  tailer.wake(true);
  tailer.wake(true);
  expect(reads).toBe(0);

  // The follower's arrival wakes the tailer for the ticks it let pass.
  const got: StreamMessage[] = [];
  fanout.subscribe({ filter: {}, deliver: (m) => got.push(...m) });
  await tailer['idle'];
  expect(reads).toBe(1);
  await waitFor(async () => {
    await tailer.caughtUp();
    return got.some((m) => m.event.jobId === job.id);
  }, { what: 'the event enqueued while idle' });
  // Once. (The first test's event may come too: the tailer starts at the newest event below the
  // horizon, which a session open then can hold below it.)
  expect(got.filter((m) => m.event.jobId === job.id)).toHaveLength(1);
  await tailer.stop();
});

/** A tailer on `feed` with one follower (so held reads retry) that collects what it publishes; its safety read a minute away. */
function followedTailer(feed: ConstructorParameters<typeof Tailer>[0]): { tailer: Tailer; got: StreamMessage[] } {
  const fanout = new Fanout();
  const got: StreamMessage[] = [];
  fanout.subscribe({ filter: {}, deliver: (m) => got.push(...m) });
  return { tailer: new Tailer(feed, fanout, { safetyMs: 60_000 }), got };
}

/**
 * The test database's queue as the tailer's feed, except that looking up other databases'
 * transactions never reports a new one (it still learns them), as on a quiet cluster: a held
 * read's retry delay is never cut short by what other test files happen to be doing.
 */
const neverLearningAnew = () =>
  feedWith({
    learnOtherDatabases: async () => (await db.queue.learnOtherDatabases(), false),
  });

it('retries soon after each new hold: reads that move on but end held back do not stretch the retry toward the safety read', async () => {
  // Two sessions of this database take turns holding the horizon, which the tailer cannot learn
  // away. Each round commits the older holder, so the tailer moves on, and enqueues above the
  // newer, so its read ends held again: as under load, when every read meets another database's
  // new transaction. A retry delay kept across rounds would double 17 times, past the 60 s safety
  // read, and the last event would wait for that read, with no tick to come. (Other databases'
  // transactions are still learned; only "a new one was found", which also shortens the retry,
  // is never reported, as on a quiet cluster.)
  const feed = neverLearningAnew();
  const holders = [new pg.Client({ connectionString: db.url }), new pg.Client({ connectionString: db.url })];
  await Promise.all(holders.map((h) => h.connect()));
  const open = (h: pg.Client) => h.query('BEGIN; SELECT pg_current_xact_id()');
  const { tailer, got } = followedTailer(feed);
  try {
    await tailer.start();
    let held = holders[0];
    await open(held);
    let last = (await db.queue.enqueue({ kind: 'held' })).job.id;
    for (let round = 1; round <= 17; round++) {
      const next = holders[round % 2];
      await open(next);
      await held.query('COMMIT');
      last = (await db.queue.enqueue({ kind: 'held' })).job.id;
      tailer.wake();
      await tailer['idle'];
      held = next;
    }
    await held.query('COMMIT');
    // No tick for the last event: only the tailer's own retry reads it before the safety read.
    await waitFor(() => got.some((m) => m.event.jobId === last), { what: 'the last event, from a retry', timeoutMs: 30_000 });
  } finally {
    await tailer.stop();
    await Promise.all(holders.map((h) => h.end()));
  }
});

it('held back at one position through many reads, retries at most a second apart: the end of a long hold is read without a tick', async () => {
  // One session of this database holds the horizon (the tailer cannot learn it away) while the
  // tailer reads 20 times over, each read ending held back at the same position, so its retry delay
  // doubles each time. Uncapped it would reach the 60 s safety read, and the event held back would
  // wait for it once the hold ends, with no tick to come.
  // Mutation caught: RETRY_MAX_MS left out of the retry delay's Math.min.
  const feed = neverLearningAnew();
  const holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  const { tailer, got } = followedTailer(feed);
  try {
    await tailer.start();
    await holder.query('BEGIN; SELECT pg_current_xact_id()');
    const { job } = await db.queue.enqueue({ kind: 'held-long' });
    for (let read = 0; read < 20; read++) {
      tailer.wake();
      await tailer['idle'];
    }
    // A retry timer's read (the first delays are a few ms) may still be running: let it end held.
    while (tailer['running']) await tailer['idle'];
    // Held back, the event is not out yet. (Earlier tests' events may be: the tailer starts at the
    // newest event below the horizon, which a session open then can hold below them.)
    expect(got.filter((m) => m.event.jobId === job.id)).toEqual([]);
    await holder.query('COMMIT');
    await waitFor(() => got.some((m) => m.event.jobId === job.id), { what: 'the held event, from a retry', timeoutMs: 30_000 });
  } finally {
    await tailer.stop();
    await holder.end();
  }
});

it('re-reads at once when the hold ends between its read and the look past it: no tick comes for that event', async () => {
  // A session of this database holds the horizon while the tailer reads, and commits right after
  // the read, before the tailer looks at what is left past its position. That look then finds the
  // event readable, not held: the read that missed it was the last one anything asks for (its
  // tick has come and gone), so only a re-read at once gets it before the 60 s safety read.
  // Mutation caught: afterCaughtUp taking 'readable' for caught up (`else if (this.fanout.listening) this.again = true;` removed).
  const holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  let release: (() => Promise<unknown>) | null = null;
  const feed = feedWith({
    feed: async (...args: Parameters<typeof db.queue.feed>) => {
      const page = await db.queue.feed(...args);
      const end = release;
      release = null;
      await end?.(); // the hold ends after the read's snapshot, before the look past it
      return page;
    },
  });
  const { tailer, got } = followedTailer(feed);
  try {
    await tailer.start();
    await holder.query('BEGIN; SELECT pg_current_xact_id()');
    const { job } = await db.queue.enqueue({ kind: 'hold-ends-midway' });
    release = () => holder.query('COMMIT');
    tailer.wake();
    await waitFor(() => got.some((m) => m.event.jobId === job.id), { what: 'the event, from the re-read' });
  } finally {
    await tailer.stop();
    await holder.end();
  }
});

it('reads again on its own soon after a failed read, not at the safety read', async () => {
  // The read fails as a dropped connection would; nothing else asks for another (no tick comes).
  // Mutation caught: the failed read scheduling no re-read (`this.retrySoon(FAILED_RETRY_MS);` removed).
  let reads = 0;
  const feed = feedWith({
    feed: (...args: Parameters<typeof db.queue.feed>) => (++reads === 1 ? Promise.reject(new Error('connection lost')) : db.queue.feed(...args)),
  });
  const { tailer, got } = followedTailer(feed);
  try {
    await tailer.start();
    const { job } = await db.queue.enqueue({ kind: 'after-a-failed-read' });
    tailer.wake();
    await tailer['idle'];
    expect(tailer.dbUp).toBe(false);
    await waitFor(() => got.some((m) => m.event.jobId === job.id) && tailer.dbUp, { what: 'the event, from the re-read after the failure' });
  } finally {
    await tailer.stop();
  }
});
