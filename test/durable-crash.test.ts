// A durable job whose worker is SIGKILLed mid-job: another worker replays the stored steps and runs
// only the unfinished ones, so no step's work runs twice.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { workerTestContext } from './fixtures/worker-process.ts';
import { waitFor } from './support/wait.ts';
import { Gates } from './support/gates.ts';

const TASKS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'durable-tasks');
const t = workerTestContext();
let gates: Gates;
beforeAll(async () => {
  gates = await Gates.start();
});
afterAll(() => gates.close());

it('re-runs only the unfinished steps after a SIGKILL: the first step ran once, the second twice only because it never finished', async () => {
  const env = { HERALD_LEASE_MS: '30000', HERALD_POLL_MS: '60000' };
  const { db } = t;
  const workers = await Promise.all([1, 2].map(() => t.spawn({ args: ['--concurrency', '2', '--tasks', TASKS], env })));
  const gate = gates.create();
  const { job } = await db.queue.enqueue({ kind: 'stepped', payload: { gate: gate.url, steps: 3 } });
  gate.open(1);
  // Step 1 is stored; step 2's work is under way.
  await gate.reached(2);
  await waitFor(async () => (await db.queue.steps(job.id)).length === 1, { what: 'step 1 to be stored' });
  const running = (await db.queue.get(job.id))!;
  const killed = workers.find((w) => w.id === running.lockedBy)!;
  killed.child.kill('SIGKILL');
  await killed.exited;
  gate.open();
  const done = await waitFor(async () => {
    const j = await db.queue.get(job.id);
    return j?.status === 'succeeded' ? j : null;
  }, { what: 'another worker to finish the job', timeoutMs: 60_000 });
  expect(done).toMatchObject({ attempt: 2, result: [1, 2, 3] });
  // The gate saw one start: step 1's work never ran again (a replay does not reach the gate).
  expect(gate.starts).toBe(1);
  const steps = await db.queue.steps(job.id);
  expect(steps.map((s) => [s.name, s.attempt])).toEqual([['step-1', 1], ['step-2', 2], ['step-3', 2]]);
});
