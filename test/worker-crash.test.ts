// A SIGKILLed worker's job is re-run by another worker long before its lease would run out:
// its liveness lock vanished with its connection, and the reaper noticed.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { until, workerTestContext } from './fixtures/worker-process.ts';
import { GATED_TASKS_DIR, Gates } from './support/gates.ts';

const t = workerTestContext();
let gates: Gates;
beforeAll(async () => {
  gates = await Gates.start();
});
afterAll(() => gates.close());

it('re-runs the job of a SIGKILLed worker on another worker within seconds, and the dead attempt writes nothing', async () => {
  const env = { HERALD_LEASE_MS: '30000', HERALD_POLL_MS: '60000' };
  const { db } = t;
  const workers = await Promise.all([1, 2].map(() => t.spawn({ args: ['--concurrency', '2', '--tasks', GATED_TASKS_DIR], env })));
  // Held running until the test opens its gate, after the kill.
  const gate = gates.create();
  const { job } = await db.queue.enqueue({ kind: 'gated', payload: { gate: gate.url } });
  const running = await until(async () => {
    const j = await db.queue.get(job.id);
    return j?.status === 'running' ? j : null;
  }, 'the job to start');
  const victim = workers.find((w) => w.id === running.lockedBy)!;
  const survivor = workers.find((w) => w !== victim)!;

  victim.child.kill('SIGKILL');
  const killedAt = Date.now();
  await victim.exited;
  gate.open();
  const done = await until(async () => {
    const j = await db.queue.get(job.id);
    return j?.status === 'succeeded' ? j : null;
  }, 'another worker to finish the job');
  // The lease had 30 s left; liveness + reaper bring the job back in about a second.
  expect(Date.now() - killedAt).toBeLessThan(10_000);
  expect(done).toMatchObject({ attempt: 2, lockedBy: null, result: { steps: 1 } });

  const events = await db.queue.events(job.id);
  expect(events.map((e) => [e.type, e.attempt, e.worker])).toEqual([
    ['enqueued', 0, null],
    ['claimed', 1, victim.id],
    ['lease_expired', 1, victim.id],
    ['claimed', 2, survivor.id],
    ['progress', 2, survivor.id],
    ['succeeded', 2, survivor.id],
  ]);
  expect(events[2].data).toMatchObject({ reason: 'owner_gone' });
});
