// SIGTERM: the worker stops claiming, lets short jobs finish, hands back the ones still running
// when the grace period ends (event 'released', attempt not burned) and exits 0.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { workerTestContext } from './fixtures/worker-process.ts';
import { GATED_TASKS_DIR, Gates } from './support/gates.ts';
import { waitFor } from './support/wait.ts';

const t = workerTestContext();
let gates: Gates;
beforeAll(async () => {
  gates = await Gates.start();
});
afterAll(() => gates.close());

it('drains short jobs, releases long ones after the grace period, and exits 0', async () => {
  const { db } = t;
  const worker = await t.spawn({
    args: ['--concurrency', '4', '--tasks', GATED_TASKS_DIR],
    // Ample for the test to open the short job's gate once the worker is stopping.
    env: { HERALD_SHUTDOWN_GRACE_MS: '10000', HERALD_POLL_MS: '60000' },
  });
  // Both are held running until the test opens their gates: the short one once the worker is
  // stopping, the long one never (the grace period runs out on it).
  const shortGate = gates.create();
  const [short, long] = await db.queue.enqueueMany([
    { kind: 'gated', payload: { gate: shortGate.url } },
    { kind: 'gated', payload: { gate: gates.create().url } },
  ]);
  await waitFor(async () => {
    const jobs = await Promise.all([short, long].map((e) => db.queue.get(e.job.id)));
    return jobs.every((j) => j?.status === 'running');
  }, { what: 'both jobs to run' });

  worker.child.kill('SIGTERM');
  // Claiming stopped: a job enqueued now stays queued.
  await worker.waitForLog((l) => l.msg === 'worker stopping: no new claims');
  const { job: late } = await db.queue.enqueue({ kind: 'echo', payload: { late: true } });
  shortGate.open();
  expect(await worker.exited).toBe(0);

  expect(await db.queue.get(short.job.id)).toMatchObject({ status: 'succeeded', attempt: 1, result: { steps: 1 } });
  expect(await db.queue.get(long.job.id)).toMatchObject({ status: 'queued', attempt: 0, lockedBy: null });
  const longEvents = await db.queue.events(long.job.id);
  expect(longEvents.map((e) => [e.type, e.attempt])).toEqual([
    ['enqueued', 0],
    ['claimed', 1],
    ['released', 0],
  ]);
  expect(longEvents[2].worker).toBe(worker.id);
  expect(await db.queue.get(late.id)).toMatchObject({ status: 'queued', attempt: 0 });
});
