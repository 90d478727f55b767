// A worker SIGKILLed in the middle of a flow: the job it held runs again elsewhere, the flow
// still ends, and nothing runs twice that had finished (each job one success, the fan-in child
// unblocked exactly once, with every parent's result).
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

it('finishes a fan-out/fan-in flow after the worker running its middle job is killed', async () => {
  const env = { HERALD_LEASE_MS: '30000', HERALD_POLL_MS: '60000' };
  const { db } = t;
  const workers = await Promise.all([1, 2].map(() => t.spawn({ args: ['--concurrency', '4', '--tasks', GATED_TASKS_DIR], env })));
  const gate = gates.create();
  const { flow, jobs } = await db.queue.createFlow('crash', [
    { ref: 'fetch', job: { kind: 'echo', payload: { rows: 3 } } },
    { ref: 'slow', dependsOn: ['fetch'], job: { kind: 'gated', payload: { gate: gate.url } } },
    { ref: 'fast1', dependsOn: ['fetch'], job: { kind: 'echo', payload: { part: 1 } } },
    { ref: 'fast2', dependsOn: ['fetch'], job: { kind: 'echo', payload: { part: 2 } } },
    { ref: 'merge', dependsOn: ['fast1', 'slow', 'fast2'], job: { kind: 'gather' } },
  ]);
  const [, slow, , , merge] = jobs;
  const running = await waitFor(async () => {
    const j = await db.queue.get(slow.id);
    return j?.status === 'running' ? j : null;
  }, { what: 'the slow job to start' });
  const victim = workers.find((w) => w.id === running.lockedBy)!;
  victim.child.kill('SIGKILL');
  await victim.exited;
  gate.open();

  const detail = await waitFor(async () => {
    const d = await db.queue.flow(flow.id);
    return d?.flow.status === 'running' ? null : d;
  }, { what: 'the flow to end', timeoutMs: 60_000 });
  expect(detail.flow).toMatchObject({ status: 'succeeded', counts: { succeeded: 5 } });
  expect((await db.queue.get(slow.id))!.attempt).toBe(2);
  expect((await db.queue.get(merge.id))!.result).toEqual({
    parents: [
      { ref: 'fast1', result: { part: 1 } },
      { ref: 'slow', result: { steps: 1 } },
      { ref: 'fast2', result: { part: 2 } },
    ],
  });
  const { rows } = await db.pool.query(
    `SELECT job_id::text AS id, count(*) FILTER (WHERE type = 'succeeded')::int AS succeeded,
            count(*) FILTER (WHERE type = 'unblocked')::int AS unblocked
     FROM herald.job_events WHERE flow_id = $1 GROUP BY job_id ORDER BY job_id`,
    [flow.id],
  );
  expect(rows).toEqual(jobs.map((j) => ({ id: j.id, succeeded: 1, unblocked: j.dependsOn.length ? 1 : 0 })).sort((a, b) => Number(a.id) - Number(b.id)));
});
