// graphile-worker@0.18 peer. One factory; graphile-batched.ts passes its preset options.
import { EventEmitter, once } from 'node:events';
import { Logger, makeWorkerUtils, run, type Runner, type TaskList, type WorkerEvents, type WorkerUtils } from 'graphile-worker';
import { CONCURRENCY, Countdown, LatencyProbe, analyzeSchema, dropSchema, failOnExit, untilZero } from './harness.ts';
import type { PeerRunner } from './types.ts';

const SCHEMA = 'graphile_worker';
const TASK = 'noop';
const INSERT_CHUNK = 5_000;
const silent = new Logger(() => () => {});

/** `worker` holds preset-only options (localQueue, *BatchDelay): they have no legacy flat form. */
export function makeGraphilePeer(name: string, worker: GraphileConfig.WorkerOptions = {}): PeerRunner {
  // Fresh schema per run so earlier runs (or crashed ones) leave nothing behind.
  async function reset(databaseUrl: string): Promise<WorkerUtils> {
    await dropSchema(databaseUrl, SCHEMA);
    const utils = await makeWorkerUtils({ connectionString: databaseUrl, schema: SCHEMA, logger: silent });
    await utils.migrate();
    return utils;
  }

  function start(databaseUrl: string, taskList: TaskList, events?: WorkerEvents): Promise<Runner> {
    return run({
      connectionString: databaseUrl,
      schema: SCHEMA,
      concurrency: CONCURRENCY,
      logger: silent,
      noHandleSignals: true, // the bench process owns SIGINT/SIGTERM
      taskList,
      ...(events ? { events } : {}),
      preset: { worker },
    });
  }

  return {
    name,

    async drain(databaseUrl, jobs) {
      const utils = await reset(databaseUrl);
      try {
        for (let done = 0; done < jobs; done += INSERT_CHUNK) {
          const n = Math.min(INSERT_CHUNK, jobs - done);
          await utils.addJobs(Array.from({ length: n }, () => ({ identifier: TASK, payload: {} })));
        }
        await analyzeSchema(databaseUrl, SCHEMA);
        const handled = new Countdown(jobs);
        const t0 = performance.now();
        const runner = await start(databaseUrl, { [TASK]: async () => handled.tick() });
        try {
          await Promise.race([handled.promise, failOnExit(runner.promise, 'graphile runner')]);
          // Completion is fire-and-forget (and batched in batched mode): wait for the deletes.
          await untilZero(() =>
            utils.withPgClient(async (c) => (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs`)).rows[0].n),
          );
          return jobs / ((performance.now() - t0) / 1000);
        } finally {
          await runner.stop();
        }
      } finally {
        await utils.release();
      }
    },

    async latency(databaseUrl, count, intervalMs) {
      const utils = await reset(databaseUrl);
      try {
        const probe = new LatencyProbe();
        const events = new EventEmitter() as WorkerEvents;
        const listening = once(events, 'pool:listen:success');
        const runner = await start(databaseUrl, { [TASK]: async (payload) => probe.started((payload as { i: number }).i) }, events);
        try {
          await listening;
          return await Promise.race([
            probe.run(count, intervalMs, (i) => utils.addJob(TASK, { i })),
            failOnExit(runner.promise, 'graphile runner'),
          ]);
        } finally {
          await runner.stop();
        }
      } finally {
        await utils.release();
      }
    },
  };
}

export default makeGraphilePeer('graphile');
