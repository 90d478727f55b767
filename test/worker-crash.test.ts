// A SIGKILLed worker's job is re-run by another worker long before its lease would run out:
// its liveness lock vanished with its connection, and the reaper noticed.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { workerTestContext } from './fixtures/worker-process.ts';
import { waitFor } from './support/wait.ts';
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
  await gate.reached(1);
  const running = (await db.queue.get(job.id))!;
  const victim = workers.find((w) => w.id === running.lockedBy)!;
  const survivor = workers.find((w) => w !== victim)!;

  // On the database's clock, just before the kill: the job's lease and the time.
  const { rows: [before] } = await db.pool.query<{ lease: Date; now: Date }>(
    'SELECT lease_expires_at AS lease, clock_timestamp() AS now FROM herald.jobs WHERE id = $1',
    [job.id],
  );
  victim.child.kill('SIGKILL');
  await victim.exited;
  gate.open();
  const done = await waitFor(async () => {
    const j = await db.queue.get(job.id);
    return j?.status === 'succeeded' ? j : null;
  }, { what: 'another worker to finish the job', timeoutMs: 60_000 });
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
  // The vanished liveness lock brought it back, not the end of its lease: the requeue (its
  // lease_expired event, on the database's clock) came long before the lease would have ended,
  // about a second after the kill (the lock-loss grace and a reaper pass).
  const requeuedAt = new Date(events[2].at).getTime();
  expect(requeuedAt).toBeLessThan(before.lease.getTime());
  expect(requeuedAt - before.now.getTime()).toBeLessThan(before.lease.getTime() - before.now.getTime() - 20_000);
});
