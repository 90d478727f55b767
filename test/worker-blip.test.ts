// A blip is not a death. A worker whose connections to PostgreSQL are cut loses its liveness lock
// with them, or (half-open) has to take a new one. The reaper must not re-run its jobs while it
// comes back: they finish on the same attempt, run once. The worker's traffic goes through a TCP
// proxy that cuts its connections. Each test has a queue of its own and stops its workers, so the
// workers of one never take the other's jobs or ride through the other's cuts.
//
// Where a test must know what the reaper did, it holds the reaper's gate itself (the advisory lock
// only one reaper at a time gets) and runs the reaper's passes on that session: no worker's reaper
// acts meanwhile, however slow the machine, so a comeback slower than the grace cannot race one.
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LOCK_NAMESPACE, REAPER_KEY } from '../queue/locks.ts';
import { Queue } from '../queue/queue.ts';
import { workerTestContext } from './fixtures/worker-process.ts';
import { GATED_TASKS_DIR, Gates, finishesOnFirstAttempt, type Gate } from './support/gates.ts';
import { TcpProxy } from './support/tcp-proxy.ts';
import { waitFor } from './support/wait.ts';

const JOBS = 10;
// A lease of ten minutes: its timer renews every 200 s, so a renewal within a test came from the
// worker reacting to the cut, not from the timer. A grace of a minute: a cut worker stops its
// handlers if no renewal lands within the grace (it may have lost its jobs), and a test's blip must
// not outlast that on a slow machine. The reaper passes a test runs itself use the same grace.
const GRACE_MS = 60_000;
const env = { HERALD_LEASE_MS: '600000', HERALD_POLL_MS: '60000', HERALD_LOCK_LOSS_GRACE_MS: String(GRACE_MS) };
/** The liveness keys held right now: session advisory locks in Herald's namespace (classid). */
const LIVE_KEYS = `SELECT objid::int AS key FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
  AND classid = ${LOCK_NAMESPACE}::bigint::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
const t = workerTestContext();
let gates: Gates;
let proxy: TcpProxy;
beforeAll(async () => {
  gates = await Gates.start();
  const u = new URL(t.db.url);
  proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port || 5432) });
});
afterAll(async () => {
  await gates.close();
  await proxy.close();
});

/** One session that holds the reaper's gate: only its own passes (queue.reap()) run until close(). */
async function holdReaperGate(url: string): Promise<{ queue: Queue; close(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: url, max: 1, idleTimeoutMillis: 0 });
  await pool.query('SELECT pg_advisory_lock($1, $2)', [LOCK_NAMESPACE, REAPER_KEY]);
  return { queue: new Queue(pool), close: () => pool.end() };
}

const ownerLock = async (id: string): Promise<number | null> =>
  (await t.db.pool.query(`SELECT owner_lock FROM herald.jobs WHERE id = $1`, [id])).rows[0].owner_lock;
const keyHeld = async (key: number): Promise<boolean> =>
  (await t.db.pool.query(`WITH live AS (${LIVE_KEYS}) SELECT 1 FROM live WHERE key = $1`, [key])).rows.length > 0;
const leaseLong = async (id: string): Promise<boolean> =>
  (await t.db.pool.query(`SELECT lease_expires_at > now() + interval '5 seconds' AS long FROM herald.jobs WHERE id = $1`, [id])).rows[0].long;

/** A worker (through `databaseUrl`, or the proxy for its listener only) running one gated job, and an idle peer. */
async function runningJob(queue: string, worker: { databaseUrl?: string; listenUrl?: string }) {
  const args = ['--concurrency', '2', '--queues', queue, '--tasks', GATED_TASKS_DIR];
  const blipped = await t.spawn({
    args,
    env: worker.listenUrl ? { ...env, HERALD_LISTEN_URL: worker.listenUrl } : env,
    databaseUrl: worker.databaseUrl ?? t.db.url,
  });
  const gate = gates.create();
  const { job } = await t.db.queue.enqueue({ queue, kind: 'gated', payload: { gate: gate.url } });
  await gate.reached(1);
  // An idle worker on a direct connection: its reaper would take the job if the blip were a death.
  const idle = await t.spawn({ args, env });
  const key = await ownerLock(job.id);
  expect(key).not.toBeNull();
  return { blipped, idle, gate, job, key: key! };
}

// Catches: LeaseKeeper.renewNow() doing nothing (`if (this.stopped) return;` -> `return;` in
// worker/leases.ts): the comeback's renewal waits for the timer, a third of a lease later.
it('a worker whose connections are all cut once keeps its job: it finishes on the same attempt, run once', async () => {
  const { blipped, idle, gate, job, key } = await runningJob('blip', { databaseUrl: proxy.route(t.db.url) });
  const reaper = await holdReaperGate(t.db.url);
  try {
    const cutAt = new Date();
    const before = proxy.cut;
    proxy.dropAllAndHold();
    expect(proxy.cut - before).toBeGreaterThanOrEqual(2); // the listener and at least one pool connection
    await waitFor(async () => !(await keyHeld(key)), { what: 'the cut listener backend to end' });
    // The reaper sees the vanished key: the job gets a short lease, the grace to come back in.
    expect(await reaper.queue.reap(undefined, GRACE_MS)).toMatchObject({ requeued: 0, orphans: 1 });
    proxy.release();
    await blipped.waitForLog((l) => l.msg === 'listener reconnected' && new Date(l.time as number) > cutAt);
    await waitFor(() => leaseLong(job.id), { what: 'the lease to be renewed', timeoutMs: 30_000 });
    // Back and renewed: the reaper's passes from now on leave the job alone.
    expect(await reaper.queue.reap(undefined, GRACE_MS)).toMatchObject({ requeued: 0, orphans: 0 });
  } finally {
    proxy.release();
    await reaper.close();
  }
  await finishesOnFirstAttempt(t.db.queue, gate, job.id, blipped.id);
  await Promise.all([blipped.stop(), idle.stop()]);
});

// Catches: no renewal when the listener goes down (drop `this.renewNow();` in LeaseKeeper.cut(),
// worker/leases.ts): the jobs keep the vanished key, and the reaper takes them after the grace.
it('a worker whose listener alone is cut, and cannot come back, keeps its job on its lease', async () => {
  const { blipped, idle, gate, job, key } = await runningJob('listener-cut', { listenUrl: proxy.route(t.db.url) });
  const reaper = await holdReaperGate(t.db.url);
  try {
    const before = proxy.cut;
    proxy.dropAllAndHold();
    expect(proxy.cut - before).toBe(1);
    await waitFor(async () => !(await keyHeld(key)), { what: 'the cut listener backend to end' });
    // The pool still reaches the database: the worker renews at once without a key, so the job is
    // left to its lease, not to the grace of a vanished key.
    await waitFor(async () => (await ownerLock(job.id)) === null && (await leaseLong(job.id)), {
      what: 'the job renewed without a key',
      timeoutMs: 30_000,
    });
    expect(await reaper.queue.reap(undefined, GRACE_MS)).toMatchObject({ requeued: 0, orphans: 0 });
    proxy.release();
    // Back: the next renewal records the key it holds again.
    await waitFor(async () => {
      const now = await ownerLock(job.id);
      return now !== null && (await keyHeld(now));
    }, { what: 'the job to record a live key again', timeoutMs: 30_000 });
  } finally {
    proxy.release();
    await reaper.close();
  }
  await finishesOnFirstAttempt(t.db.queue, gate, job.id, blipped.id);
  await Promise.all([blipped.stop(), idle.stop()]);
});

// Only the worker's end of its connections is reset (a NAT or firewall reset): the old backends
// live on, the old listener's still holding the liveness key, so the reconnect must take a new
// key. The jobs follow it (each renewal records the key held now), and when the old backends end
// later, an idle second worker's reaper finds every job's owner alive.
// Catches: renewLeases keeping the jobs' old key (`owner_lock = j.owner_lock` in queue/sql/lease.ts):
// the jobs never follow the new key, and the reaper takes all ten once the old backends end.
it('a half-open blip: the jobs follow the new liveness key, and the old backends ending takes none of them', async () => {
  const { db } = t;
  const blipped = await t.spawn({ args: ['--concurrency', String(JOBS), '--queues', 'half-open', '--tasks', GATED_TASKS_DIR], env, databaseUrl: proxy.route(db.url) });
  const jobs: { id: string; gate: Gate }[] = [];
  for (let i = 0; i < JOBS; i++) {
    const gate = gates.create();
    const { job } = await db.queue.enqueue({ queue: 'half-open', kind: 'gated', payload: { gate: gate.url } });
    jobs.push({ id: job.id, gate });
  }
  await Promise.all(jobs.map((j) => j.gate.reached(1)));
  // An idle worker on a direct connection: its reaper runs every half second.
  const idle = await t.spawn({ args: ['--concurrency', '2', '--queues', 'half-open', '--tasks', GATED_TASKS_DIR], env });

  const ids = jobs.map((j) => j.id);
  const { rows: [{ keys }] } = await db.pool.query<{ keys: number[] }>(
    `SELECT array_agg(DISTINCT owner_lock) AS keys FROM herald.jobs WHERE id = ANY($1)`, [ids],
  );
  expect(keys).toHaveLength(1);
  const oldKey = keys[0];

  const before = proxy.cut;
  proxy.cutClientSide();
  expect(proxy.cut - before).toBeGreaterThanOrEqual(2); // the listener and at least one pool connection
  // The old listener's backend still holds the old key, so the reconnect took a new one, and the
  // renewals that followed recorded it on every job.
  await waitFor(async () => {
    const { rows } = await db.pool.query(
      `WITH live AS (${LIVE_KEYS})
       SELECT count(*)::int AS n FROM herald.jobs
       WHERE id = ANY($1) AND owner_lock <> $2 AND owner_lock IN (SELECT key FROM live)`,
      [ids, oldKey],
    );
    return rows[0].n === JOBS;
  }, { what: 'every job to record the new liveness key', timeoutMs: 30_000 });
  expect(proxy.lingeringCount).toBeGreaterThanOrEqual(2);

  // The old backends end: the old key vanishes. No job is owned by a missing key, so the idle
  // worker's reaper has nothing to shorten or take.
  proxy.endServerSides();
  await waitFor(async () => {
    const { rows } = await db.pool.query(`WITH live AS (${LIVE_KEYS}) SELECT count(*)::int AS n FROM live WHERE key = $1`, [oldKey]);
    return rows[0].n === 0;
  }, { what: 'the old backend to end' });
  for (const j of jobs) await finishesOnFirstAttempt(db.queue, j.gate, j.id, blipped.id);
  await Promise.all([blipped.stop(), idle.stop()]);
});
