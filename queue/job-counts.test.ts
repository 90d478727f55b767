// herald.job_counts against the jobs themselves: after every kind of write the triggers keep the
// sums equal to a fresh count, the fold loses nothing under held locks in either order, and the
// counts reply is the one the old whole-table count gave, without reading herald.jobs.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { lockWaitersReach, pidOf } from '../test/support/lock-waiters.ts';
import { dropEmptyJobCounts, foldJobCounts } from './sql/counts.ts';
import { queueCounts } from './sql/reads.ts';

const db = useTestDatabase({ backoffBaseMs: 60_000 }, { truncate: ['herald.jobs', 'herald.job_events', 'herald.job_edges', 'herald.flows', 'herald.queues'] });
const q = db.queue;
const clients: pg.Client[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.end()));
});

const W = 'host:1:counts';

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  clients.push(c);
  return c;
}

/** The counts as the triggers keep them, and a fresh count of the jobs, per queue and status. */
async function bothCounts(): Promise<{ kept: unknown[]; counted: unknown[] }> {
  const kept = await db.pool.query(`
    SELECT queue, status::text, sum(n)::int AS n FROM herald.job_counts GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2`);
  const counted = await db.pool.query(`
    SELECT queue, status::text, count(*)::int AS n FROM herald.jobs GROUP BY 1, 2 ORDER BY 1, 2`);
  return { kept: kept.rows, counted: counted.rows };
}

async function expectExact(): Promise<void> {
  const { kept, counted } = await bothCounts();
  expect(counted.length).toBeGreaterThan(0);
  expect(kept).toEqual(counted);
}

// The reply as the statement before job_counts computed it: a count of every job.
const WHOLE_TABLE_COUNTS = `
WITH counts AS (
  SELECT queue,
         count(*) FILTER (WHERE status = 'queued' AND available_at <= now())::int AS queued,
         count(*) FILTER (WHERE status = 'queued' AND available_at > now())::int AS scheduled,
         count(*) FILTER (WHERE status = 'running')::int AS running,
         count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
         count(*) FILTER (WHERE status = 'failed')::int AS failed,
         count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled,
         count(*) FILTER (WHERE status = 'blocked')::int AS blocked
  FROM herald.jobs
  GROUP BY queue
)
SELECT coalesce(c.queue, s.queue) AS queue,
       coalesce(c.queued, 0) AS queued, coalesce(c.scheduled, 0) AS scheduled, coalesce(c.running, 0) AS running,
       coalesce(c.succeeded, 0) AS succeeded, coalesce(c.failed, 0) AS failed, coalesce(c.cancelled, 0) AS cancelled,
       coalesce(c.blocked, 0) AS blocked,
       coalesce(s.paused, false) AS paused, s.concurrency, s.group_concurrency, s.rate_count, s.rate_period_ms, s.dead_letter,
       s.updated_at, s.updated_by
FROM counts c FULL JOIN herald.queues s ON s.queue = c.queue
WHERE $1::text IS NULL OR coalesce(c.queue, s.queue) = $1
ORDER BY 1`;

/** Both replies, for every queue and for `one`, read in one snapshot (the same now()). */
async function expectSameReplies(one: string): Promise<void> {
  const c = await db.pool.connect();
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    for (const param of [null, one]) {
      const old = (await c.query(WHOLE_TABLE_COUNTS, [param])).rows;
      expect(old.length).toBeGreaterThan(0);
      expect((await c.query(queueCounts.text, [param])).rows).toEqual(old);
    }
  } finally {
    await c.query('COMMIT');
    c.release();
  }
}

/** A mix of every status and every path that moves a job between counts. */
async function mixedWorkload(): Promise<void> {
  await q.patchQueue('mail', { deadLetter: 'mail.dead' });
  const now = Date.now();
  await q.enqueueMany([
    ...Array.from({ length: 12 }, (_, i) => ({ kind: 'send', queue: 'mail', payload: { i } })),
    { kind: 'send', queue: 'mail', runAt: new Date(now + 2_000) }, // most likely in the current minute
    { kind: 'send', queue: 'mail', runAt: new Date(now + 90_000) },
    { kind: 'send', queue: 'mail', runAt: new Date(now + 7_200_000) },
    { kind: 'send', queue: 'mail', runAt: new Date(now - 7_200_000) },
    { kind: 'resize', queue: 'images', maxAttempts: 1 },
    { kind: 'resize', queue: 'images', expireAt: new Date(now - 1_000) },
    ...Array.from({ length: 5 }, () => ({ kind: 'resize', queue: 'images' })),
  ]);
  // Claim, complete, fail with attempts left (a retry in a minute: scheduled), fail for good
  // (a dead-letter copy), cancel a running one and a queued one.
  const mail = await q.claim({ worker: W, queues: ['mail'], limit: 8 });
  await q.complete(W, mail.slice(0, 3).map((j) => ({ id: j.id, attempt: j.attempt, result: null })));
  await q.fail(W, mail.slice(3, 5).map((j) => ({ id: j.id, attempt: j.attempt, error: new Error('later') })));
  await q.fail(W, [{ id: mail[5].id, attempt: mail[5].attempt, error: new Error('never'), final: true }]);
  await q.cancel(mail[6].id);
  const queued = await q.list({ queue: 'mail', status: 'queued', limit: 1 });
  await q.cancel(queued.jobs[0].id);
  // The expiry pass, a manual retry, the redrive of the dead letter (a new job in mail).
  expect(await q.expire()).toBe(1);
  await q.retry(mail[5].id);
  await q.bulk('redrive', { queue: 'mail.dead' });
  // A lease that ran out: the reaper requeues the job, or fails it (its last attempt).
  const [img] = await q.claim({ worker: W, queues: ['images'], limit: 1 });
  await db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [img.id]);
  const reaped = await q.reap();
  expect(reaped.requeued + reaped.failed).toBe(1);
  // A flow: a parent, a child blocked on it, unblocked when it succeeds; another cancelled with its
  // failed parent.
  const { jobs: flow } = await q.createFlow('f', [
    { ref: 'a', job: { kind: 'step', queue: 'flows' } },
    { ref: 'b', dependsOn: ['a'], job: { kind: 'step', queue: 'flows' } },
    { ref: 'c', job: { kind: 'step', queue: 'flows', maxAttempts: 1 } },
    { ref: 'd', dependsOn: ['c'], job: { kind: 'step', queue: 'flows' } },
    { ref: 'e', dependsOn: ['b'], job: { kind: 'step', queue: 'flows' } },
  ]);
  const steps = await q.claim({ worker: W, queues: ['flows'], limit: 2 });
  expect(steps.map((s) => s.id).sort()).toEqual([flow[0].id, flow[2].id].sort());
  const [a, c] = flow[0].id === steps[0].id ? steps : [steps[1], steps[0]];
  await q.complete(W, [{ id: a.id, attempt: a.attempt, result: 1 }]);
  await q.fail(W, [{ id: c.id, attempt: c.attempt, error: new Error('x') }]);
  // A bulk delete and retention remove finished jobs (retention: one finished two hours ago).
  expect((await q.bulk('delete', { queue: 'mail', status: 'cancelled' })).affected).toBeGreaterThan(0);
  await db.pool.query(`UPDATE herald.jobs SET finished_at = now() - interval '2 hours' WHERE id = $1`, [mail[0].id]);
  expect(await q.cleanup(3_600_000)).toBe(1);
}

describe('job counts', () => {
  it('equal a fresh count after every kind of write, before and after the fold', async () => {
    await mixedWorkload();
    const { counted } = await bothCounts();
    // The workload left jobs in every status.
    expect(new Set((counted as { status: string }[]).map((r) => r.status))).toEqual(
      new Set(['queued', 'running', 'succeeded', 'failed', 'cancelled', 'blocked']),
    );
    await expectExact();
    await expectSameReplies('mail');
    // The fold leaves one row per queue, status and due minute, in stripe 0, and the same sums.
    expect(await q.foldCounts()).toBeGreaterThan(0);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS rows, count(*) FILTER (WHERE stripe <> 0 OR n = 0)::int AS other FROM herald.job_counts`);
    expect(rows[0].other).toBe(0);
    await expectExact();
    await expectSameReplies('images');
  });
});

// Jobs of a fixed minute long past, so every write below lands on the same count row.
const INSERT_OLD = `INSERT INTO herald.jobs (kind, queue, available_at) VALUES ('send', 'mail', '2000-01-01T00:00:30Z')`;

describe('the fold', () => {
  it('skips the rows of a transaction still open and folds them once it commits: nothing lost', async () => {
    await q.enqueueMany(Array.from({ length: 5 }, () => ({ kind: 'send', queue: 'mail' })));
    const a = await client();
    await a.query(INSERT_OLD); // a's stripe now has a committed row
    await a.query('BEGIN');
    await a.query(INSERT_OLD);
    await a.query(`UPDATE herald.jobs SET status = 'cancelled', finished_at = now() WHERE id IN (1, 2)`);
    // a holds its stripe's rows; the fold neither waits for them nor loses them.
    expect(await q.foldCounts()).toBeGreaterThan(0);
    await a.query('COMMIT');
    await expectExact();
    await q.foldCounts();
    await expectExact();
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM herald.job_counts WHERE stripe <> 0`);
    expect(rows[0].n).toBe(0);
  });

  it('makes a writer of a row it deleted wait, and that writer then adds a new row: nothing lost', async () => {
    const a = await client();
    await a.query(INSERT_OLD);
    await a.query(INSERT_OLD);
    const b = await client();
    await b.query('BEGIN');
    expect((await b.query(foldJobCounts.text)).rows[0].folded).toBeGreaterThan(0);
    // b deleted a's row (and holds it): a's next job waits for b's commit.
    const waiter = await pidOf(a);
    const write = a.query(INSERT_OLD);
    await lockWaitersReach(db.pool, { waiter, holder: await pidOf(b) });
    await b.query(dropEmptyJobCounts.text);
    await b.query('COMMIT');
    await write;
    await expectExact();
    expect((await db.pool.query(`SELECT sum(n)::int AS n FROM herald.job_counts`)).rows[0].n).toBe(3);
  });
});

describe('the stripes', () => {
  it('let two sessions change the counts of one queue at once: neither waits for the other', async () => {
    await q.enqueueMany(Array.from({ length: 4 }, () => ({ kind: 'send', queue: 'mail' })));
    // Two sessions whose backends write different stripes (1 + pid % 1024) although their pids
    // agree modulo 16 (the stripes of before, which 64 producers shared about four to a row).
    const a = await client();
    const pid = async (c: pg.Client): Promise<number> => (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const pa = await pid(a);
    let b = await client();
    for (let tries = 0; ; tries++) {
      const pb = await pid(b);
      if (pb % 16 === pa % 16 && pb % 1024 !== pa % 1024) break;
      if (tries > 200) throw new Error('no second backend with the same pid modulo 16');
      await b.end(); // one spare connection at a time
      clients.pop();
      b = await client();
    }
    await a.query('BEGIN');
    await a.query(`UPDATE herald.jobs SET status = 'cancelled', finished_at = now() WHERE id = 1`);
    // b moves a job of the same queue between the same statuses while a holds its rows: one
    // counter row per queue and status would make it wait for a's commit, and this would hang.
    await b.query(`UPDATE herald.jobs SET status = 'cancelled', finished_at = now() WHERE id = 2`);
    await a.query('COMMIT');
    await expectExact();
  });
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Loops': number;
  Plans?: PlanNode[];
}
const planNodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(planNodes)];

describe('the counts reply', () => {
  it('reads no job when no queued job is due within the current minute', async () => {
    // One job of this minute, claimed and failed: its minute counts no queued job any more.
    await q.enqueue({ kind: 'send', queue: 'mail', maxAttempts: 1 });
    const [job] = await q.claim({ worker: W, queues: ['mail'], limit: 1 });
    await q.fail(W, [{ id: job.id, attempt: job.attempt, error: new Error('x') }]);
    const now = Date.now();
    await q.enqueueMany([
      { kind: 'send', queue: 'mail', runAt: new Date(now - 7_200_000) },
      { kind: 'send', queue: 'mail', runAt: new Date(now + 7_200_000) },
    ]);
    await db.pool.query('ANALYZE herald.jobs');
    const { rows } = await db.pool.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${queueCounts.text}`, [null]);
    const onJobs = planNodes(rows[0]['QUERY PLAN'][0].Plan).filter((n) => n['Relation Name'] === 'jobs');
    expect(onJobs.map((n) => n['Actual Loops'])).toEqual(onJobs.map(() => 0));
    expect(await q.counts()).toEqual([expect.objectContaining({ queue: 'mail', queued: 1, scheduled: 1, failed: 1, running: 0 })]);
  });
});
