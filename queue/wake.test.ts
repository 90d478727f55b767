// Coalesced wake-ups (drizzle/0019_wake_at_commit.sql): a producer that commits while another holds
// the notifier skips its NOTIFY, and a listener that passes the barrier after the notification it
// does get still sees the skipper's rows. Commits are ordered with held locks, never sleeps.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { installCommitHold, openTransaction, type HeldCommit } from '../test/support/commit-hold.ts';
import { lockWaitersReach, pidOf } from '../test/support/lock-waiters.ts';
import { waitFor } from '../test/support/wait.ts';
import { EVENTS_CHANNEL, JOBS_CHANNEL } from './channels.ts';
import { WorkService } from './services/work.ts';
import { Db } from './services/db.ts';
import { createPool } from './database.ts';

const db = useTestDatabase();
let listener: pg.Client;
let holder: pg.Client;
let held: number; // the holder's pid
let heard: { channel: string; payload: string }[] = [];

beforeAll(async () => {
  await installCommitHold(db.pool);
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (n) => heard.push({ channel: n.channel, payload: n.payload ?? '' }));
  await listener.query(`LISTEN ${JOBS_CHANNEL}; LISTEN ${EVENTS_CHANNEL}`);
  holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  held = await pidOf(holder);
});
afterEach(() => {
  heard = [];
});
afterAll(async () => {
  await listener.end();
  await holder.end();
});

const insert = (queue: string, extra = '') => `INSERT INTO herald.jobs (queue, kind, payload${extra ? ', available_at' : ''}) VALUES ('${queue}', 'k', '{}'${extra ? `, ${extra}` : ''})`;
/** What the listener got so far: a round trip on it delivers anything already sent to it. */
const received = async () => {
  await listener.query('SELECT 1');
  return heard.map((h) => `${h.channel}:${h.payload}`);
};
const count = async (queue: string) => (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM herald.jobs WHERE queue = $1', [queue])).rows[0].n;
const intents = async () => (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM herald.wake_intents')).rows[0].n;
/** What the transaction on `c` would wake at commit, as recorded so far (sorted; [] for nothing). */
const pending = async (c: pg.ClientBase) =>
  (await c.query<{ t: string[] }>(`SELECT ARRAY(SELECT unnest(nullif(current_setting('herald.wake_targets', true), '')::text[]) ORDER BY 1) AS t`)).rows[0].t;
// T2 writes its job 10 minutes in the past: still runnable, but another row of herald.job_counts
// than T1's, whose row lock T1 holds until it commits (two sessions may share a stripe).
const EARLIER = `now() - interval '10 minutes'`;
const work = () => new WorkService(new Db(db.pool, {}));

it('a producer committing while another holds the notifier skips its NOTIFY; the first one wakes for both', async () => {
  const t1 = await openTransaction(db.pool, [insert('skip')]);
  const held1 = await t1.commitHeld(holder, 101);
  await lockWaitersReach(db.pool, { waiter: t1.pid, holder: held }); // T1 took the notifiers and waits inside its COMMIT
  await db.pool.query(insert('skip', EARLIER)); // T2: commits, skips both NOTIFYs
  expect(await received()).toEqual([]);
  await held1.release();
  await waitFor(() => heard.length >= 2, { what: "T1's notifications" });
  expect((await received()).sort()).toEqual(['herald_events:', 'herald_jobs:skip']);
  expect(await work().passQueueBarriers(['skip'])).toBe(true);
  expect(await count('skip')).toBe(2);
});

/**
 * T1 notifies `queue` and commits; T2, which committed alongside, skipped its NOTIFY and stays
 * stopped inside its COMMIT (holding the barrier) until the returned commit is released.
 */
async function skipperAfterNotifier(queue: string, key: number): Promise<HeldCommit> {
  const t1 = await openTransaction(db.pool, [insert(queue)]);
  const t2 = await openTransaction(db.pool, [insert(queue, EARLIER)]);
  const held1 = await t1.commitHeld(holder, key);
  await lockWaitersReach(db.pool, { waiter: t1.pid, holder: held });
  const held2 = await t2.commitHeld(holder, key + 1);
  await lockWaitersReach(db.pool, { waiter: t1.pid, holder: held }, { waiter: t2.pid, holder: held });
  await held1.release();
  await waitFor(async () => (await received()).includes(`herald_jobs:${queue}`), { what: "T1's notification" });
  return held2;
}

it('the barrier holds the reader back until a skipper that commits after the notifier has committed', async () => {
  const held2 = await skipperAfterNotifier('late', 201);
  // A read right now misses T2's job: that is what the barrier is for.
  expect(await count('late')).toBe(1);
  const passed = work().passQueueBarriers(['late']);
  // T2, and the barrier (a session of db.pool) waiting for it
  await lockWaitersReach(db.pool, { waiter: held2.pid, holder: held }, { waiter: { app: 'herald' }, holder: held2.pid });
  await held2.release();
  expect(await passed).toBe(true);
  expect(await count('late')).toBe(2);
  expect((await received()).filter((h) => h === 'herald_jobs:late')).toHaveLength(1);
});

it('a claim pipelined behind the barrier on one connection still waits for the skipper, and takes its job', async () => {
  const pipelined = createPool(db.url, { max: 1, pipeline: true });
  try {
    const held2 = await skipperAfterNotifier('piped', 251);
    const claimed = new WorkService(new Db(pipelined, {})).claimAfterBarriers(['piped'], { worker: 'w', queues: ['piped'], limit: 10 });
    // T2, and the barrier waiting for it (the claim queued behind it on the pipelined connection)
    await lockWaitersReach(db.pool, { waiter: held2.pid, holder: held }, { waiter: { app: 'herald' }, holder: held2.pid });
    await held2.release();
    const { jobs, barrier } = await claimed;
    expect(barrier).toBe(true);
    expect(jobs).toHaveLength(2);
  } finally {
    await pipelined.end();
  }
});

it('two queues never share a notifier: each is woken while the other is held', async () => {
  const t1 = await openTransaction(db.pool, [insert('qa')]);
  const held1 = await t1.commitHeld(holder, 301);
  await lockWaitersReach(db.pool, { waiter: t1.pid, holder: held });
  await db.pool.query(insert('qb'));
  await waitFor(async () => (await received()).includes('herald_jobs:qb'), { what: "qb's notification while qa's notifier is held" });
  await held1.release();
  await waitFor(async () => (await received()).includes('herald_jobs:qa'), { what: "qa's notification" });
});

it('a scheduled payload is sent as before while an immediate one of its queue holds the notifier', async () => {
  const t1 = await openTransaction(db.pool, [insert('sched')]);
  const held1 = await t1.commitHeld(holder, 401);
  await lockWaitersReach(db.pool, { waiter: t1.pid, holder: held });
  const at = Date.parse('2100-01-01T00:00:00Z');
  await db.pool.query(insert('sched', `'2100-01-01T00:00:00Z'`));
  await waitFor(async () => (await received()).includes(`herald_jobs:sched ${at}`), { what: 'the scheduled payload' });
  await held1.release();
  await waitFor(async () => (await received()).includes('herald_jobs:sched'), { what: "T1's notification" });
});

it('a rolled-back transaction or savepoint sends nothing and leaves no intent row', async () => {
  const t = await openTransaction(db.pool, [insert('gone')]);
  await t.rollback();
  const c = await db.pool.connect();
  try {
    await c.query('BEGIN');
    await c.query('SAVEPOINT s');
    await c.query(insert('gone'));
    expect(await pending(c)).toEqual(['herald_events', 'herald_jobs gone']);
    expect((await c.query('SELECT count(*)::int AS n FROM herald.wake_intents')).rows[0].n).toBe(1);
    await c.query('ROLLBACK TO SAVEPOINT s');
    expect(await pending(c)).toEqual([]);
    expect((await c.query('SELECT count(*)::int AS n FROM herald.wake_intents')).rows[0].n).toBe(0);
    await c.query(insert('kept'));
    await c.query('COMMIT');
    expect(await pending(c)).toEqual([]);
  } finally {
    c.release();
  }
  await waitFor(async () => (await received()).includes('herald_jobs:kept'), { what: "the kept queue's notification" });
  expect(await received()).not.toContain('herald_jobs:gone');
  expect(await count('gone')).toBe(0);
  expect(await intents()).toBe(0);
});

it('records each target once per transaction, however many statements wrote, and notifies each once', async () => {
  const c = await db.pool.connect();
  try {
    await c.query('BEGIN');
    for (let i = 0; i < 5; i++) await c.query(insert(i % 2 ? 'many-a' : 'many-b'));
    expect(await pending(c)).toEqual(['herald_events', 'herald_jobs many-a', 'herald_jobs many-b']);
    expect((await c.query('SELECT count(*)::int AS n FROM herald.wake_intents')).rows[0].n).toBe(1);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
  await waitFor(() => heard.length >= 3, { what: 'the notifications' });
  expect((await received()).sort()).toEqual(['herald_events:', 'herald_jobs:many-a', 'herald_jobs:many-b']);
  expect(await intents()).toBe(0);
});

it('a transaction that runs its deferred constraints early still wakes for what it writes after', async () => {
  const c = await db.pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(insert('early'));
    await c.query('SET CONSTRAINTS ALL IMMEDIATE');
    await c.query(insert('after'));
    await c.query('COMMIT');
  } finally {
    c.release();
  }
  await waitFor(async () => ['herald_jobs:early', 'herald_jobs:after'].every((h) => heard.some((x) => `${x.channel}:${x.payload}` === h)), { what: 'both queues woken' });
  expect(await intents()).toBe(0);
});
