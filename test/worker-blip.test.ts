// A blip is not a death. A worker whose connections to PostgreSQL are all cut at once loses its
// liveness lock with them. The reaper must not re-run its jobs while it comes back: they finish
// on the same attempt, run once. The worker's traffic goes through a TCP proxy that drops all
// its connections, and holds the new ones until a reaper has had its look at the missing lock.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { workerTestContext } from './fixtures/worker-process.ts';
import { GATED_TASKS_DIR, Gates, finishesOnFirstAttempt } from './support/gates.ts';
import { TcpProxy } from './support/tcp-proxy.ts';
import { waitFor } from './support/wait.ts';

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

it('a worker whose connections are all cut once keeps its job: it finishes on the same attempt, run once', async () => {
  const { db } = t;
  const env = { HERALD_LEASE_MS: '30000', HERALD_POLL_MS: '60000' };
  const args = ['--concurrency', '2', '--tasks', GATED_TASKS_DIR];
  const blipped = await t.spawn({ args, env, databaseUrl: proxy.route(db.url) });
  const gate = gates.create();
  const { job } = await db.queue.enqueue({ kind: 'gated', payload: { gate: gate.url } });
  await waitFor(async () => (await db.queue.get(job.id))?.status === 'running', { what: 'the job to start' });
  // An idle worker on a direct connection: its reaper runs every half second.
  const reaper = await t.spawn({ args, env });

  const cutAt = new Date();
  proxy.dropAllAndHold();
  expect(proxy.cut).toBeGreaterThanOrEqual(2); // the listener and at least one pool connection
  // Held until a reaper has acted on the missing lock: it either took the job (a death), or
  // gave its lease a short grace (a blip, maybe).
  await waitFor(async () => {
    const { rows } = await db.pool.query(
      `SELECT status, attempt, lease_expires_at < now() + interval '5 seconds' AS short FROM herald.jobs WHERE id = $1`,
      [job.id],
    );
    return rows[0].status !== 'running' || rows[0].attempt !== 1 || rows[0].short;
  }, { what: 'a reaper to act on the vanished liveness lock' });
  // The reaper has had its look. It is frozen while the blipped worker comes back, so that a
  // starved machine cannot stretch the comeback past the one-second grace; it resumes once the
  // lease is long again, and its passes from then on must leave the job alone.
  reaper.child.kill('SIGSTOP');
  try {
    proxy.release();
    await blipped.waitForLog((l) => l.msg === 'listener reconnected' && new Date(l.time as number) > cutAt);
    // Back, it renewed the lease: still its job, on attempt 1, lease long again.
    await waitFor(async () => {
      const { rows } = await db.pool.query(`SELECT lease_expires_at > now() + interval '5 seconds' AS long FROM herald.jobs WHERE id = $1`, [job.id]);
      return rows[0].long;
    }, { what: 'the lease to be renewed' });
  } finally {
    reaper.child.kill('SIGCONT');
  }
  await finishesOnFirstAttempt(db.queue, gate, job.id, blipped.id);
});
