// Queue settings across three worker PROCESSES competing for the same queue. Each limit is
// checked twice: by sampling the running count while they work, and afterwards from the rows
// (a claim's started_at is taken after it waited for the claims before it, and a completion's
// finished_at before its commit, so the [started_at, finished_at) intervals of the rows are
// exactly what each claim saw). The workers poll only every minute: every wake-up the tests
// rely on (a freed slot, a resume) has to come through NOTIFY.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerTestContext, type WorkerProcess } from './fixtures/worker-process.ts';
import { GATED_TASKS_DIR, Gates } from './support/gates.ts';
import { waitFor } from './support/wait.ts';

const t = workerTestContext();
const SLOTS = 5;
const ENV = { HERALD_POLL_MS: '60000', HERALD_CONCURRENCY: String(SLOTS) };
let workers: WorkerProcess[];
let gates: Gates;

beforeAll(async () => {
  gates = await Gates.start();
  workers = await Promise.all([1, 2, 3].map(() => t.spawn({ env: ENV, args: ['--tasks', GATED_TASKS_DIR] })));
});

/** Samples `count` until `stop` resolves; returns the largest value seen. */
async function sampleMax(count: () => Promise<number>, stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.finally(() => (done = true));
  let max = 0;
  while (!done) max = Math.max(max, await count());
  return max;
}

interface Interval {
  started_at: Date;
  finished_at: Date;
  group: string | null;
  locked: string | null;
}

/** The most intervals open at once (an end at the same instant as a start does not overlap it). */
function maxOverlap(rows: Interval[]): number {
  const points = rows.flatMap((r) => [
    [r.started_at.getTime(), 1],
    [r.finished_at.getTime(), -1],
  ]);
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of points) max = Math.max(max, (open += d));
  return max;
}

async function finishedRows(queue: string): Promise<(Interval & { worker: string })[]> {
  const { rows } = await t.db.pool.query(
    `SELECT j.started_at, j.finished_at, j."group",
            (SELECT e.worker FROM herald.job_events e WHERE e.job_id = j.id AND e.type = 'claimed' LIMIT 1) AS worker
     FROM herald.jobs j WHERE j.queue = $1 AND j.status = 'succeeded'`,
    [queue],
  );
  return rows;
}

const allDone = (queue: string, n: number) =>
  waitFor(async () => {
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM herald.jobs WHERE queue = $1 AND status = 'succeeded'`, [queue]);
    return rows[0].n === n;
  }, { what: `${n} jobs of ${queue} to succeed`, timeoutMs: 60_000 });

const running = async (queue: string, group?: string) =>
  (
    await t.db.pool.query(
      `SELECT count(*)::int AS n FROM herald.jobs WHERE queue = $1 AND status = 'running' AND ($2::text IS NULL OR "group" = $2)`,
      [queue, group ?? null],
    )
  ).rows[0].n as number;

describe('limits across three worker processes', () => {
  it('concurrency: never more than N jobs of the queue run at once, and all of them run', async () => {
    await t.db.queue.patchQueue('conc', { concurrency: 3 });
    await t.db.queue.enqueueMany(Array.from({ length: 45 }, () => ({ kind: 'sleep', queue: 'conc', payload: { ms: 30 } })));
    const done = allDone('conc', 45);
    const sampled = await sampleMax(() => running('conc'), done);
    await done;
    expect(sampled).toBeLessThanOrEqual(3);
    const rows = await finishedRows('conc');
    expect(maxOverlap(rows)).toBeLessThanOrEqual(3);
    // The limit was the bound, not a lack of work: it was reached, by more than one process.
    expect(maxOverlap(rows)).toBe(3);
    expect(new Set(rows.map((r) => r.worker)).size).toBeGreaterThan(1);
  });

  it('groupConcurrency: never more than N of one group at once, while groups run side by side', async () => {
    await t.db.queue.patchQueue('groups', { groupConcurrency: 2 });
    const groups = ['a', 'b', 'c'];
    await t.db.queue.enqueueMany(
      Array.from({ length: 36 }, (_, i) => ({ kind: 'sleep', queue: 'groups', group: groups[i % 3], payload: { ms: 30 } })),
    );
    const done = allDone('groups', 36);
    const sampled = await Promise.all(groups.map((g) => sampleMax(() => running('groups', g), done)));
    await done;
    for (const max of sampled) expect(max).toBeLessThanOrEqual(2);
    const rows = await finishedRows('groups');
    for (const g of groups) expect(maxOverlap(rows.filter((r) => r.group === g))).toBeLessThanOrEqual(2);
    expect(maxOverlap(rows)).toBeGreaterThan(2);
  });

  it('rateLimit: at most count jobs start in any window of periodMs', async () => {
    await t.db.queue.patchQueue('rate', { rateLimit: { count: 4, periodMs: 1000 } });
    await t.db.queue.enqueueMany(Array.from({ length: 12 }, () => ({ kind: 'echo', queue: 'rate', payload: {} })));
    await allDone('rate', 12);
    const starts = (await finishedRows('rate')).map((r) => r.started_at.getTime()).sort((a, b) => a - b);
    // Any 5 consecutive starts span at least the period.
    for (let i = 0; i + 4 < starts.length; i++) expect(starts[i + 4] - starts[i]).toBeGreaterThanOrEqual(1000);
  });

  // Every job of the paused queue that can start waits at a gate of its own: reaching the gate is
  // its start, whether it came from a claim or from a claim-ahead buffer (which writes no event).
  // Quick jobs first give the workers a pace, so their claims take gated jobs ahead into their
  // buffers; once all 15 slots hold gated jobs, nothing can start until the test opens a gate,
  // which it does only after the PATCH returned. The quick jobs have a queue of their own: one
  // handed back from a slow worker's buffer can find every slot gated, and waits for the gates.
  it('paused: no job starts after the PATCH returns, from a claim or a buffer; the buffers go back at once; resuming wakes the workers', async () => {
    try {
      await pausedScenario();
    } catch (err) {
      // A wait that runs out says which step; the rows and each worker's last lines say why.
      const { rows } = await t.db.pool.query(
        `SELECT queue, status, locked_by, count(*)::int AS n FROM herald.jobs WHERE queue LIKE 'pause%' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      );
      console.error('the pause queues at failure', JSON.stringify(rows));
      workers.forEach((w, i) => console.error(`worker ${i + 1} last lines`, JSON.stringify(w.logs.slice(-15))));
      throw err;
    }
  }, 150_000);
});

/** Fills every slot with gated jobs of `queue`, after quick jobs that give the workers a pace. */
async function fillSlots(queue: string) {
  const GATED = 400;
  const slots = SLOTS * workers.length;
  const started = new Set<string>();
  const jobGates = Array.from({ length: GATED }, () => gates.create());
  await t.db.queue.enqueueMany(Array.from({ length: 200 }, () => ({ kind: 'sleep', queue: `${queue}-warmup`, priority: 10, payload: { ms: 5 } })));
  const made = await t.db.queue.enqueueMany(jobGates.map((g) => ({ kind: 'gated', queue, payload: { gate: g.url } })));
  made.forEach(({ job }, i) => void jobGates[i].reached(1).then(() => started.add(job.id)));
  await waitFor(() => started.size >= slots, { what: `gated jobs to fill all ${slots} slots`, timeoutMs: 30_000 });
  expect(started.size, 'gated jobs started: one a slot, none in a slot freed since').toBe(slots);
  // Claimed ahead and waiting in a buffer: leased, but never started.
  return { GATED, slots, started, jobGates, buffered: (await running(queue)) - slots };
}

async function pausedScenario() {
  // Gated jobs waiting in a claim-ahead buffer when the PATCH comes are what this test is about.
  // Whether a worker buffers any depends on its pace when they come, and a buffer goes back
  // after 5 s: a try that ends with none opens its gates, and the next one starts on fresh
  // queues. Caught: BufferedJobs not handing its jobs back on a settings change (the wait for
  // the buffers to go back runs out).
  let queue = '';
  let fill: Awaited<ReturnType<typeof fillSlots>> | undefined;
  for (let attempt = 1; attempt <= 5 && !fill?.buffered; attempt++) {
    if (fill) {
      for (const g of fill.jobGates) g.open();
      await allDone(queue, fill.GATED);
      await allDone(`${queue}-warmup`, 200);
    }
    queue = `pause${attempt}`;
    fill = await fillSlots(queue);
  }
  const { GATED, slots, started, jobGates, buffered: bufferedAtPatch } = fill!;
  const beforePatch = new Set(started);
  expect(bufferedAtPatch, 'gated jobs waiting in a claim-ahead buffer when the PATCH comes').toBeGreaterThan(0);
  const logged = workers.map((w) => w.logs.length);

  await t.db.queue.patchQueue(queue, { paused: true });
  // Whatever commits from now on is invisible to this snapshot.
  const { rows: snap } = await t.db.pool.query('SELECT pg_current_snapshot()::text AS s');
  // The buffers go back while every slot is still taken: the change itself did it, not a TTL.
  await waitFor(async () => (await running(queue)) === slots, { what: 'the buffered jobs of the paused queue to go back' });
  // A worker logs the hand-back after its statement committed, and the line crosses a pipe: it
  // can reach this process after the rows changed.
  const handedBack = () =>
    workers
      .flatMap((w, i) => w.logs.slice(logged[i]))
      .filter((l) => l.msg === 'returned buffered jobs to the queue' && l.why === 'queue settings changed')
      .reduce((n, l) => n + (l.returned as number), 0);
  await waitFor(() => handedBack() > 0, { what: 'a worker to log the jobs it handed back' });

  for (const g of jobGates) g.open();
  await waitFor(async () => (await running(queue)) === 0, { what: 'the running jobs to finish' });
  expect([...started].sort()).toEqual([...beforePatch].sort());
  const { rows: late } = await t.db.pool.query(
    `SELECT count(*)::int AS n FROM herald.job_events
     WHERE queue = $2 AND type = 'claimed' AND NOT pg_visible_in_snapshot(tx, $1::pg_snapshot)`,
    [snap[0].s, queue],
  );
  expect(late[0].n).toBe(0);
  const left = await t.db.pool.query(`SELECT count(*)::int AS n FROM herald.jobs WHERE queue = $1 AND status = 'queued'`, [queue]);
  expect(left.rows[0].n).toBe(GATED - slots);
  const { job } = await t.db.queue.enqueue({ kind: 'echo', queue });
  expect(job.waitingFor).toBe('paused');
  // Polling is a minute away: only the NOTIFY of the resume can start the rest in time.
  await t.db.queue.patchQueue(queue, { paused: false });
  await allDone(queue, GATED + 1);
  await allDone(`${queue}-warmup`, 200);
}

afterAll(async () => {
  // Nothing was left running by a test that failed half-way.
  await Promise.all(workers.map((w) => w.stop()));
  await gates?.close();
});
