// The event stream served from a real streaming standby (HERALD_READ_URL): exactly once, in
// (tx, id) order, resumable, while the standby serves the reads; the horizon named by the
// primary; and the hand-over to the primary and back when the standby is stopped mid-stream or
// falls behind. A primary and a standby of its own (test/support/standby.ts), whatever
// DATABASE_URL says: the test needs both ends under its control.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { openStream, simulateWorker, sleep, testServer, type TestServer } from './server-support.ts';
import { startStandbyPair, type StandbyPair } from './support/standby.ts';
import type { TestDatabase } from './support/db.ts';
import { waitFor } from './support/wait.ts';

let pair: StandbyPair;
/** Well above a loaded machine's replay delay: the healthy tests must never fall back to the primary. */
const MAX_LAG_MS = 3_000;
let db: TestDatabase;
let standbyStats: pg.Pool;

beforeAll(async () => {
  pair = await startStandbyPair();
  const pool = createPool(pair.primaryUrl);
  db = { url: pair.primaryUrl, name: 'herald', pool, queue: new Queue(pool, { backoffBaseMs: 5, backoffMaxMs: 20 }), drop: () => pool.end() };
});
afterAll(async () => {
  await standbyStats?.end();
  await db?.drop();
  await pair?.stop();
});

interface Row { id: string; job_id: string; type: string }
const rows = async (): Promise<Row[]> =>
  (await db.pool.query<Row>(`SELECT e.id::text AS id, e.job_id::text AS job_id, e.type FROM herald.job_events e ORDER BY e.tx, e.id`)).rows;
type Stream = Awaited<ReturnType<typeof openStream>>;
const eventIds = (s: Stream) => s.messages.filter((m) => m.json?.eventId).map((m) => String(m.json!.eventId));

/** The job_events index and table reads the standby has counted (its own statistics). */
async function standbyEventReads(): Promise<number> {
  standbyStats ??= createPool(pair.standbyUrl, { max: 1 });
  const { rows: r } = await standbyStats.query(
    `SELECT coalesce(sum(coalesce(idx_scan, 0) + coalesce(seq_scan, 0)), 0)::int AS n FROM pg_stat_user_tables WHERE schemaname = 'herald' AND relname LIKE 'job_events%'`,
  );
  return r[0].n as number;
}

/** Enqueues `jobs` in batches while `workers` simulated workers run them; resolves when all have ended. */
async function work(jobs: number, during?: () => Promise<void>): Promise<void> {
  const stop = new AbortController();
  const workers = [0, 1].map((i) => simulateWorker(db.queue, `sim:${i}`, stop.signal));
  try {
    for (let i = 0; i < jobs; i += 10) {
      await db.queue.enqueueMany(Array.from({ length: 10 }, (_, k) => ({ kind: 'k', queue: (i + k) % 2 ? 'odd' : 'even', payload: (i + k) % 7 ? {} : { fail: true }, maxAttempts: 2 })));
      if (i === Math.floor(jobs / 20) * 10) await during?.();
      await sleep(2);
    }
    await waitFor(async () => (await db.pool.query(`SELECT 1 FROM herald.jobs WHERE status NOT IN ('succeeded', 'failed', 'cancelled') LIMIT 1`)).rowCount === 0, { what: 'every job ended' });
  } finally {
    stop.abort();
    await Promise.all(workers);
  }
}

/** Every stream holds exactly the rows' ids, in (tx, id) order. */
async function expectExactlyTheRows(streams: Stream[]): Promise<void> {
  const expected = (await rows()).map((r) => r.id);
  await waitFor(() => streams.every((s) => eventIds(s).length >= expected.length), { what: 'every stream received every event' });
  for (const s of streams) expect(eventIds(s)).toEqual(expected);
}

async function truncate(): Promise<void> {
  await db.pool.query('TRUNCATE herald.jobs, herald.job_events');
  await pair.caughtUp();
}

describe('a server reading a streaming standby', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await testServer({ db, listen: true, readUrl: pair.standbyUrl, readMaxLagMs: MAX_LAG_MS });
  });
  afterAll(() => s?.close());

  it('streams every event exactly once in (tx, id) order, live and replayed, read from the standby', async () => {
    await truncate();
    const readsBefore = await standbyEventReads();
    const served = { ...s.replica!.served };
    const live = await Promise.all([0, 1, 2].map(() => openStream(`${s.url}/api/events?lastEventId=0`)));
    await work(200);
    await expectExactlyTheRows(live);
    // Resumed from a cursor in the middle: exactly what came after it.
    const all = await rows();
    const middle = live[0].messages.find((m) => m.json?.eventId === all[Math.floor(all.length / 2)].id)!.id!;
    const resumed = await openStream(`${s.url}/api/events`, { 'last-event-id': middle });
    await waitFor(() => eventIds(resumed).length >= all.length - Math.floor(all.length / 2) - 1, { what: 'the resumed stream caught up' });
    expect(eventIds(resumed)).toEqual(all.slice(Math.floor(all.length / 2) + 1).map((r) => r.id));
    for (const st of [...live, resumed]) await st.close();
    // The standby served the stream's reads (its statistics are flushed about once a second).
    // Mutation caught: FeedService.feed reading the primary whatever db.replica says.
    await waitFor(async () => (await standbyEventReads()) > readsBefore, { what: 'the standby counted reads of herald.job_events' });
    // Not one of the stream's reads went to the primary. Mutation caught: whenReplayed returning undefined.
    expect(s.replica!.served.primary).toBe(served.primary);
    expect(s.replica!.served.replica).toBeGreaterThan(served.replica);
    const health = (await (await fetch(`${s.url}/api/health`)).json()) as { replica: unknown };
    expect(health.replica).toMatchObject({ up: true, reading: 'replica', maxLagMs: MAX_LAG_MS });
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/^herald_replica_lag_seconds \d/m);
    expect(metrics).toContain(`herald_replica_max_lag_seconds ${MAX_LAG_MS / 1000}\n`);
    expect(metrics).toContain('herald_replica_reading 1\n');
  });

  it('reads below the horizon the primary names: an older open transaction holds a newer commit back, on the standby too', async () => {
    await truncate();
    const stream = await openStream(`${s.url}/api/events?lastEventId=0`);
    // A holds the lower transaction id, and writes its event last.
    const a = await db.pool.connect();
    try {
      await a.query('BEGIN');
      await a.query('SELECT pg_current_xact_id()');
      await db.queue.enqueue({ kind: 'b', queue: 'later' });
      await pair.caughtUp();
      // A read of the stream begun after B committed (and the standby replayed it) has ended.
      await s.hub.tailer.caughtUp();
      await a.query(`INSERT INTO herald.jobs (kind, queue) VALUES ('a', 'earlier')`);
      await a.query('COMMIT');
    } finally {
      a.release();
    }
    // The standby's own snapshot lists no running transaction ("xmin:xmax:"): a horizon taken from
    // it would have handed out B's event while A was open, and A's would then be lost behind the cursor.
    // Mutation caught: primaryFeedPosition returning pg_snapshot_xmax as the horizon.
    await expectExactlyTheRows([stream]);
    await stream.close();
  });

  it('goes on from the primary when the standby stops mid-stream, and back to the standby when it returns, without a gap or a repeat', async () => {
    await truncate();
    const streams = await Promise.all([0, 1].map(() => openStream(`${s.url}/api/events?lastEventId=0`)));
    await work(300, async () => {
      await pair.stopStandby();
    });
    // The standby is down: everything came from the primary.
    expect(s.replica!.status()).toMatchObject({ up: false, reading: 'primary' });
    await expectExactlyTheRows(streams);
    await pair.startStandby();
    await waitFor(() => s.replica!.status().reading === 'replica', { what: 'the server reads the standby again' });
    await work(100);
    await expectExactlyTheRows(streams);
    for (const st of streams) await st.close();
  });

  it('reads the primary while the standby is more than HERALD_READ_MAX_LAG_MS behind, and the standby again once it has caught up', async () => {
    await truncate();
    const stream = await openStream(`${s.url}/api/events?lastEventId=0`);
    const standby = new pg.Client({ connectionString: pair.standbyUrl });
    await standby.connect();
    try {
      await standby.query('SELECT pg_wal_replay_pause()');
      // Replay is paused: these events can reach the client only through the primary.
      // Mutation caught: whenReplayed waiting on for ever instead of giving up past maxLagMs.
      await work(50);
      await expectExactlyTheRows([stream]);
      expect(s.replica!.status()).toMatchObject({ up: true, reading: 'primary' });
      expect(s.replica!.status().lagMs).toBeGreaterThan(MAX_LAG_MS);
      const health = (await (await fetch(`${s.url}/api/health`)).json()) as { replica: unknown };
      expect(health.replica).toMatchObject({ up: true, reading: 'primary' });
      await standby.query('SELECT pg_wal_replay_resume()');
    } finally {
      await standby.query('SELECT pg_wal_replay_resume()').catch(() => {});
      await standby.end();
    }
    await waitFor(() => s.replica!.status().reading === 'replica', { what: 'the server reads the standby again' });
    await work(50);
    await expectExactlyTheRows([stream]);
    await stream.close();
  });

  it('serves job lists and pages from the standby, and a job it has not replayed yet from the primary', async () => {
    await truncate();
    const standby = new pg.Client({ connectionString: pair.standbyUrl });
    await standby.connect();
    try {
      await standby.query('SELECT pg_wal_replay_pause()');
      const { job } = await db.queue.enqueue({ kind: 'fresh' });
      // The list comes from the paused standby: the new job is not in it yet...
      const list = (await (await fetch(`${s.url}/api/jobs`)).json()) as { jobs: { id: string }[] };
      expect(list.jobs.map((j) => j.id)).not.toContain(job.id);
      // ...but its own page is found on the primary rather than answered 404.
      const page = await fetch(`${s.url}/api/jobs/${job.id}`);
      expect(page.status).toBe(200);
    } finally {
      await standby.query('SELECT pg_wal_replay_resume()');
      await standby.end();
    }
  });
});

describe('the board reads with the standby behind the primary', () => {
  // A lag limit no test reaches: the standby is read however long its replay stays paused.
  let s2: TestServer;
  beforeAll(async () => {
    s2 = await testServer({ db, listen: true, readUrl: pair.standbyUrl, readMaxLagMs: 600_000 });
  });
  afterAll(() => s2?.close());
  const get = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${s2.url}${path}`);
    expect(r.status, path).toBe(200);
    return (await r.json()) as T;
  };

  it('answers GET /api/events/recent, job lists, pages and events, flows and queues from the standby', async () => {
    await truncate();
    const { flow, jobs } = await db.queue.createFlow('marked', [
      { ref: 'a', job: { kind: 'a', queue: 'marked' } },
      { ref: 'b', dependsOn: ['a'], job: { kind: 'b', queue: 'marked' } },
    ]);
    const a = jobs.find((j) => j.kind === 'a')!;
    await pair.caughtUp();
    await waitFor(async () => (await get<{ events: unknown[] }>('/api/events/recent')).events.length === 2, { what: 'the tailer published both events' });
    const standby = new pg.Client({ connectionString: pair.standbyUrl });
    await standby.connect();
    try {
      await standby.query('SELECT pg_wal_replay_pause()');
      // The marker: the primary now has job a cancelled and none of its events; only the paused
      // standby still has it queued, with its `enqueued` event.
      await db.queue.cancel(a.id);
      await db.pool.query('DELETE FROM herald.job_events WHERE job_id = $1', [a.id]);
      expect((await db.queue.get(a.id))!.status).toBe('cancelled');
      // Mutation caught: GET /api/events/recent reading ctx.queue (the primary) instead of ctx.reads.
      const recent = await get<{ events: { jobId: string; type: string }[] }>('/api/events/recent');
      expect(recent.events.filter((e) => e.jobId === a.id).map((e) => e.type)).toEqual(['enqueued']);
      const list = await get<{ jobs: { id: string; status: string }[] }>('/api/jobs?queue=marked');
      expect(list.jobs.find((j) => j.id === a.id)?.status).toBe('queued');
      expect((await get<{ status: string }>(`/api/jobs/${a.id}`)).status).toBe('queued');
      const events = await get<{ events: { type: string }[] }>(`/api/jobs/${a.id}/events`);
      expect(events.events.map((e) => e.type)).toEqual(['enqueued']);
      const detail = await get<{ flow: { counts: Record<string, number> } }>(`/api/flows/${flow.id}`);
      expect(detail.flow.counts).toMatchObject({ queued: 1, cancelled: 0 });
      const queues = await get<{ queues: { queue: string; queued: number }[] }>('/api/queues');
      expect(queues.queues.find((q) => q.queue === 'marked')?.queued).toBe(1);
      expect(s2.replica!.status().reading).toBe('replica');
    } finally {
      await standby.query('SELECT pg_wal_replay_resume()');
      await standby.end();
    }
  });
});
