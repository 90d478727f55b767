// DBOS Transact 5 (@dbos-inc/dbos-sdk) as a `--durable` peer: workflows of DBOS.runStep,
// DBOS.sleep and DBOS.recv/send, its system database a fresh database of its own on the same
// PostgreSQL. The step workload runs on a DBOS queue with `workerConcurrency` set, as DBOS
// documents for bounded concurrency; sleeps and signals run workflows started directly.
// DBOS is a process-wide singleton: each workload registers, launches, and shuts it down with
// `deregister`, so the next registers afresh.
import { DBOS } from '@dbos-inc/dbos-sdk';
import { Countdown, SLEEP_MS, untilZero, withClient } from './harness.ts';
import type { DurableRunner } from './types.ts';

const QUEUE = 'bench';
/**
 * How often the queue looks for workflows to start (DBOS's default is 1 s). Every workflow of the
 * step workload is queued at once, so this only bounds how soon a freed slot is refilled.
 */
const QUEUE_POLL_MS = 10;

async function launch(databaseUrl: string): Promise<void> {
  DBOS.setConfig({ name: 'herald-bench', systemDatabaseUrl: databaseUrl, logLevel: 'error' });
  await DBOS.launch();
}

const left = (databaseUrl: string) =>
  untilZero(() => withClient(databaseUrl, async (c) =>
    (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dbos.workflow_status WHERE status <> 'SUCCESS'`)).rows[0].n));

const dbos: DurableRunner = {
  name: 'dbos',

  async steps(databaseUrl, jobs, steps, concurrency) {
    const stepMs: number[] = [];
    const handled = new Countdown(jobs);
    const stepped = DBOS.registerWorkflow(async (n: number) => {
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await DBOS.runStep(async () => i, { name: `step-${i}` });
        stepMs.push(performance.now() - t);
      }
      handled.tick();
    }, { name: 'stepped' });
    await launch(databaseUrl);
    try {
      await DBOS.registerQueue(QUEUE, { workerConcurrency: concurrency, minPollingIntervalMs: QUEUE_POLL_MS });
      const t0 = performance.now();
      await Promise.all(Array.from({ length: jobs }, () => DBOS.startWorkflow(stepped, { queueName: QUEUE })(steps)));
      await handled.promise;
      // The workflow's status is written after the function returns: wait until all landed.
      await left(databaseUrl);
      return { stepsPerSecond: (jobs * steps) / ((performance.now() - t0) / 1000), stepMs };
    } finally {
      await DBOS.shutdown({ deregister: true });
    }
  },

  async sleepBriefly(databaseUrl, count) {
    const samples: number[] = [];
    const napper = DBOS.registerWorkflow(async () => {
      const t = performance.now();
      await DBOS.sleep(SLEEP_MS);
      samples.push(performance.now() - t);
    }, { name: 'napper' });
    await launch(databaseUrl);
    try {
      for (let i = 0; i < count; i++) await (await DBOS.startWorkflow(napper)()).getResult();
      return samples;
    } finally {
      await DBOS.shutdown({ deregister: true });
    }
  },

  async signal(databaseUrl, count) {
    const samples: number[] = [];
    let sentAt = 0;
    let ready = new Countdown(1);
    let resumed = new Countdown(1);
    const waiter = DBOS.registerWorkflow(async () => {
      ready.tick();
      await DBOS.recv('go', 60);
      samples.push(performance.now() - sentAt);
      resumed.tick();
    }, { name: 'waiter' });
    await launch(databaseUrl);
    try {
      for (let i = 0; i < count; i++) {
        ready = new Countdown(1);
        resumed = new Countdown(1);
        const handle = await DBOS.startWorkflow(waiter)();
        await ready.promise;
        // Sent once recv has stored its deadline (its first write, just before it listens).
        await untilZero(() => withClient(databaseUrl, async (c) =>
          (await c.query<{ n: number }>(`SELECT (count(*) = 0)::int AS n FROM dbos.operation_outputs WHERE workflow_uuid = $1`, [handle.workflowID])).rows[0].n), 1);
        sentAt = performance.now();
        await DBOS.send(handle.workflowID, { ok: true }, 'go');
        await resumed.promise;
      }
      return samples;
    } finally {
      await DBOS.shutdown({ deregister: true });
    }
  },
};

export default dbos;
