// Herald's durable execution as a `--durable` runner: the real worker runtime (startWorker,
// in-process) running handlers of ctx.step, ctx.sleep and ctx.waitFor, driven as bench/peers/dbos.ts
// drives DBOS. Every job writes its full event log (claims, steps, sleeps, signals).
import { createPool } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import { startWorker } from '../worker/index.ts';
import type { TaskContext } from '../worker/task.ts';
import { Countdown, SLEEP_MS, untilZero } from './peers/harness.ts';
import type { DurableRunner } from './peers/types.ts';

const ENQUEUE_CHUNK = 1_000;

async function setup(databaseUrl: string) {
  await migrate(databaseUrl);
  const pool = createPool(databaseUrl, { max: 2, applicationName: 'herald:bench-producer' });
  return { pool, queue: new Queue(pool) };
}

const isWaiting = `SELECT count(*)::int AS n FROM herald.jobs WHERE id = $1 AND wait IS NULL`;

export const heraldDurable: DurableRunner & { replay(databaseUrl: string, steps: number, count: number): Promise<number[]> } = {
  name: 'herald',

  async steps(databaseUrl, jobs, steps, concurrency) {
    const { pool, queue } = await setup(databaseUrl);
    const stepMs: number[] = [];
    const handled = new Countdown(jobs);
    const w = await startWorker({
      databaseUrl,
      concurrency,
      tasks: {
        stepped: async (p: { steps: number }, ctx: TaskContext) => {
          for (let i = 0; i < p.steps; i++) {
            const t = performance.now();
            await ctx.step(`step-${i}`, () => i);
            stepMs.push(performance.now() - t);
          }
          handled.tick();
        },
      },
    });
    try {
      const t0 = performance.now();
      for (let done = 0; done < jobs; done += ENQUEUE_CHUNK) {
        await queue.enqueueMany(Array.from({ length: Math.min(ENQUEUE_CHUNK, jobs - done) }, () => ({ kind: 'stepped', payload: { steps } })));
      }
      await handled.promise;
      // Outcomes are written in batches after the handlers return: wait until all landed.
      await untilZero(async () => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM herald.jobs WHERE status <> 'succeeded'`)).rows[0].n);
      return { stepsPerSecond: (jobs * steps) / ((performance.now() - t0) / 1000), stepMs };
    } finally {
      await w.stop();
      await pool.end();
    }
  },

  async sleepBriefly(databaseUrl, count) {
    const { pool, queue } = await setup(databaseUrl);
    const sleptAt = new Map<string, number>();
    const samples: number[] = [];
    let resumed = new Countdown(1);
    const w = await startWorker({
      databaseUrl,
      concurrency: 1,
      tasks: {
        napper: async (_p: unknown, ctx: TaskContext) => {
          // The first run stamps; the replay passes here again and keeps the first stamp.
          if (!sleptAt.has(ctx.job.id)) sleptAt.set(ctx.job.id, performance.now());
          await ctx.sleep(SLEEP_MS);
          samples.push(performance.now() - sleptAt.get(ctx.job.id)!);
          resumed.tick();
        },
      },
    });
    try {
      for (let i = 0; i < count; i++) {
        resumed = new Countdown(1);
        await queue.enqueue({ kind: 'napper' });
        await resumed.promise;
      }
      return samples;
    } finally {
      await w.stop();
      await pool.end();
    }
  },

  async signal(databaseUrl, count) {
    const { pool, queue } = await setup(databaseUrl);
    const samples: number[] = [];
    let sentAt = 0;
    let ready = new Countdown(1);
    let resumed = new Countdown(1);
    const w = await startWorker({
      databaseUrl,
      concurrency: 1,
      tasks: {
        waiter: async (_p: unknown, ctx: TaskContext) => {
          ready.tick();
          await ctx.waitFor('go');
          samples.push(performance.now() - sentAt);
          resumed.tick();
        },
      },
    });
    try {
      for (let i = 0; i < count; i++) {
        ready = new Countdown(1);
        resumed = new Countdown(1);
        const { job } = await queue.enqueue({ kind: 'waiter' });
        await ready.promise;
        // Sent once the run has ended to wait (jobs.wait set): the wake-up is what is timed.
        await untilZero(async () => (await pool.query<{ n: number }>(isWaiting, [job.id])).rows[0].n, 1);
        sentAt = performance.now();
        await queue.signal(job.id, 'go', { ok: true });
        await resumed.promise;
      }
      return samples;
    } finally {
      await w.stop();
      await pool.end();
    }
  },

  /**
   * Herald only (a DBOS workflow replays only when recovered): `count` jobs of `steps` stored
   * steps that then sleep SLEEP_MS; ms from the resumed run's start to its last replayed step.
   */
  async replay(databaseUrl, steps, count) {
    const { pool, queue } = await setup(databaseUrl);
    const samples: number[] = [];
    const slept = new Set<string>();
    let resumed = new Countdown(1);
    const w = await startWorker({
      databaseUrl,
      concurrency: 1,
      tasks: {
        replayed: async (_p: unknown, ctx: TaskContext) => {
          const t0 = performance.now();
          for (let i = 0; i < steps; i++) await ctx.step(`step-${i}`, () => i);
          if (slept.has(ctx.job.id)) samples.push(performance.now() - t0);
          slept.add(ctx.job.id);
          await ctx.sleep(SLEEP_MS); // ends the first run; the replay's returns at once
          resumed.tick();
        },
      },
    });
    try {
      for (let i = 0; i < count; i++) {
        resumed = new Countdown(1);
        await queue.enqueue({ kind: 'replayed' });
        await resumed.promise;
      }
      return samples;
    } finally {
      await w.stop();
      await pool.end();
    }
  },
};
