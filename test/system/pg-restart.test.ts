// After a PostgreSQL restart every liveness lock is gone at once, the living workers' with the
// dead ones'. A worker that comes back within its lease keeps its jobs: they finish on the same
// attempt, run once. The worker's connections go through a TCP proxy that holds its reconnects
// until the test has run the reaper on the restarted server: the reaper sees the job with its
// owner's lock missing, and must leave it alone (mutation caught: drop `j.started_at >
// pg_postmaster_start_time()` from markOrphans in queue/sql/reap.ts, and the lease is cut to the grace).
//
// While it cannot reach the database, a worker cannot tell a restart from a partition, so it stops
// its handlers 90% of the grace after its listener was cut (docs/workers-liveness.md). With the
// default 1 s grace, a restart that takes longer (pg_ctlcluster takes seconds) stops the handler
// and the job runs again after its lease. So this worker and the test's reaper share a grace
// longer than the outage: what is tested is the restart, not the partition rule.
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { migrate } from '../../queue/migrate.ts';
import { Queue } from '../../queue/queue.ts';
import { GATED_TASKS_DIR, Gates, finishesOnFirstAttempt } from '../support/gates.ts';
import { spawnHerald, type HeraldProcess } from '../support/herald-process.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { waitFor } from '../support/wait.ts';
import { ownCluster } from './cluster.ts';

const cleanup: (() => Promise<unknown>)[] = [];
/** Longer than any restart here, shorter than the lease: a lease cut to it shows. */
const GRACE_MS = 30_000;
afterAll(async () => {
  for (const undo of cleanup.reverse()) await undo();
});

it('a worker back within its lease after a PostgreSQL restart keeps its job: same attempt, run once', async () => {
  const cluster = await ownCluster('herald_restart');
  cleanup.push(() => cluster.close());
  await migrate(cluster.url);
  const gates = await Gates.start();
  cleanup.push(() => gates.close());
  const u = new URL(cluster.url);
  const proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port) });
  cleanup.push(() => proxy.close());
  const open = () => {
    const pool = new pg.Pool({ connectionString: cluster.url, max: 2 });
    pool.on('error', () => {}); // the restart cuts its idle connections
    return { pool, queue: new Queue(pool) };
  };
  let db = open();

  const worker: HeraldProcess = spawnHerald(['worker', '--concurrency', '2', '--tasks', GATED_TASKS_DIR], {
    DATABASE_URL: proxy.route(cluster.url),
    HERALD_LISTEN_URL: undefined,
    HERALD_LEASE_MS: '60000',
    HERALD_POLL_MS: '60000',
    HERALD_LOCK_LOSS_GRACE_MS: String(GRACE_MS),
  });
  cleanup.push(() => worker.dispose());
  const started = await worker.waitForMessage(/^worker started$/, 60_000);
  const gate = gates.create();
  const { job } = await db.queue.enqueue({ kind: 'gated', payload: { gate: gate.url } });
  await gate.reached(1);
  const { rows: [{ claimLease }] } = await db.pool.query('SELECT lease_expires_at AS "claimLease" FROM herald.jobs WHERE id = $1', [job.id]);

  // The worker's connections drop with the server, and its reconnects wait at the proxy.
  proxy.dropAllAndHold();
  await cluster.restart();
  await db.pool.end().catch(() => {});
  db = open();
  const { rows: [{ restartedAt }] } = await db.pool.query('SELECT pg_postmaster_start_time() AS "restartedAt"');

  // The reaper looks while the owner's lock is missing: the job is neither taken nor shortened.
  expect(await db.queue.reap(1000, GRACE_MS)).toEqual({ requeued: 0, failed: 0, cancelled: 0, orphans: 0 });
  const { rows: [held] } = await db.pool.query(
    `SELECT status, attempt, locked_by, lease_expires_at >= $2 AS "notShortened" FROM herald.jobs WHERE id = $1`,
    [job.id, claimLease],
  );
  expect(held).toEqual({ status: 'running', attempt: 1, locked_by: started.worker, notShortened: true });

  proxy.release();
  await worker.waitFor((l) => l.msg === 'listener reconnected' && new Date(l.time as number) > restartedAt, 60_000);
  // Back, it renews its lease on the restarted server.
  await waitFor(
    async () => (await db.pool.query(`SELECT lease_expires_at > pg_postmaster_start_time() + interval '60 seconds' AS renewed FROM herald.jobs WHERE id = $1`, [job.id])).rows[0].renewed,
    { what: 'the worker to renew its lease after the restart' },
  );
  expect(await db.queue.reap(1000, GRACE_MS)).toMatchObject({ requeued: 0, orphans: 0 });

  await finishesOnFirstAttempt(db.queue, gate, job.id, String(started.worker));
  await db.pool.end();
});
