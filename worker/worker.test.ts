// The worker in-process against real PostgreSQL: handler context, outcomes the database cannot
// take, fencing, timers instead of polls, and the shutdown signal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import type { Job } from '../queue/job.ts';
import { loadConfig } from '../queue/config.ts';
import { Worker } from './worker.ts';
import type { WorkerOptions } from './options.ts';
import type { TaskContext } from './tasks.ts';
import { waitFor } from '../test/support/wait.ts';
import { watchLog } from '../test/support/log-watch.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

let queueNo = 0;
/** A worker on a queue of its own, so tests cannot take each other's jobs. */
async function withWorker(opts: Partial<WorkerOptions>, fn: (w: Worker, queue: string) => Promise<void>): Promise<void> {
  const queue = `q${++queueNo}`;
  const w = new Worker({ databaseUrl: db.url, concurrency: 4, pollMs: 60_000, queues: [queue], ...opts });
  await w.start();
  try {
    await fn(w, queue);
  } finally {
    await w.stop();
  }
}

const finished = (id: string) =>
  waitFor(async () => {
    const j = await db.queue.get(id);
    return j && ['succeeded', 'failed', 'cancelled'].includes(j.status) ? j : null;
  }, { what: `job ${id} to finish` });

describe('handlers', () => {
  it('get the job, a signal, progress and a logger; the result is stored', async () => {
    let seen: TaskContext | undefined;
    const task = async (payload: { n: number }, ctx: TaskContext) => {
      seen = ctx;
      await ctx.progress(50, 'half');
      ctx.log.info('working');
      return { doubled: payload.n * 2 };
    };
    await withWorker({ tasks: { double: task } }, async (w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'double', queue, payload: { n: 21 } });
      const done = await finished(job.id);
      expect(done).toMatchObject({ status: 'succeeded', result: { doubled: 42 }, lockedBy: null, progress: { percent: 50, message: 'half' } });
      expect(seen!.job).toMatchObject({ id: job.id, attempt: 1, lockedBy: w.id });
      expect(seen!.signal.aborted).toBe(false);
      expect((await db.queue.events(job.id)).map((e) => e.type)).toEqual(['enqueued', 'claimed', 'progress', 'succeeded']);
    });
  });

  it('see the whole job as the database has it while it runs', async () => {
    let seen: { job: Job; stored: Job | null } | undefined;
    const task = async (_p: unknown, ctx: TaskContext) => {
      seen = { job: ctx.job, stored: await db.queue.get(ctx.job.id) };
      expect(ctx.job).toBe(seen.job); // built once
    };
    await withWorker({ tasks: { whole: task }, capabilities: ['gpu'] }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({
        kind: 'whole', queue, payload: { a: [1, 'two'] }, priority: 3, maxAttempts: 2, requires: ['gpu'], tags: ['x', 'y.z'],
        idempotencyKey: `whole-${queue}`, group: 'g', timeoutMs: 60_000, expireAt: new Date(Date.now() + 3_600_000).toISOString(),
      });
      expect((await finished(job.id)).status).toBe('succeeded');
      expect(seen!.job).toEqual(seen!.stored);
      expect(seen!.job).toMatchObject({ status: 'running', attempt: 1, tags: ['x', 'y.z'], requires: ['gpu'], group: 'g' });
    });
  });

  it('coalesce progress: 10,000 reports write a few events, and the last value is the one stored', async () => {
    const N = 10_000;
    const task = async (_p: unknown, ctx: TaskContext) => {
      for (let i = 1; i <= N; i++) await ctx.progress((i / N) * 100, `item ${i}`);
      return 'done';
    };
    await withWorker({ tasks: { items: task } }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'items', queue });
      const done = await finished(job.id);
      expect(done).toMatchObject({ status: 'succeeded', progress: { percent: 100, message: `item ${N}` } });
      const events = await db.queue.events(job.id);
      const progress = events.filter((e) => e.type === 'progress');
      // At most 4 a second: the first report, then the newest value per tick and the last one
      // (uncoalesced, every report was an event: 10,000).
      expect(progress.length).toBeGreaterThanOrEqual(2);
      expect(progress.length).toBeLessThan(100);
      expect(progress.at(-1)!.data).toMatchObject({ percent: 100, message: `item ${N}` });
      expect(events.at(-1)!.type).toBe('succeeded');
    });
  });

  it('fail the attempt when the result is not JSON, or progress is out of range', async () => {
    const tasks = { big: async () => ({ n: 10n }), over: async (_p: unknown, ctx: TaskContext) => ctx.progress(150) };
    await withWorker({ tasks }, async (_w, queue) => {
      const [big, over] = await db.queue.enqueueMany([
        { kind: 'big', queue, maxAttempts: 1 },
        { kind: 'over', queue, maxAttempts: 1 },
      ]);
      expect(await finished(big.job.id)).toMatchObject({ status: 'failed', result: null });
      expect((await db.queue.get(big.job.id))!.lastError!.message).toMatch(/result is not JSON-serialisable.*BigInt/);
      expect((await finished(over.job.id)).lastError!.message).toMatch(/progress percent must be a number from 0 to 100/);
    });
  });

  it('a result Postgres refuses fails only its own job, not the batch it was written with', async () => {
    const tasks = { nul: async () => 'a\u0000b', ok: async () => 'fine' };
    await withWorker({ tasks, concurrency: 10 }, async (_w, queue) => {
      const jobs = await db.queue.enqueueMany([
        { kind: 'ok', queue }, { kind: 'nul', queue, maxAttempts: 1 }, { kind: 'ok', queue },
      ]);
      const [a, bad, b] = await Promise.all(jobs.map((e) => finished(e.job.id)));
      expect([a.status, a.result, b.status, b.result]).toEqual(['succeeded', 'fine', 'succeeded', 'fine']);
      expect(bad.status).toBe('failed');
      expect(bad.lastError!.message).toMatch(/result could not be stored/);
    });
  });
});

describe('fencing', () => {
  it('a lost lease fires the signal with LeaseLostError and the outcome is never written', async () => {
    let reason: unknown;
    let returned = false;
    const task = (_p: unknown, ctx: TaskContext) =>
      new Promise((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          reason = ctx.signal.reason;
          // A handler that ignores its signal and returns anyway: the value must be discarded.
          setTimeout(() => {
            resolve('stale');
            returned = true;
          }, 0);
        });
      });
    // Renewals every second; no reaper in this worker, so a stalled renewal before the takeover
    // below cannot let it requeue the job first on a slow machine.
    await withWorker({ tasks: { hang: task }, leaseMs: 3_000, reapEveryMs: 3_600_000 }, async (w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'hang', queue });
      await waitFor(async () => (await db.queue.get(job.id))?.status === 'running', { what: 'the job to run' });
      // Another worker took over a newer attempt (what the reaper plus a re-claim would do), with a
      // lease of its own.
      await db.pool.query(
        `UPDATE herald.jobs SET attempt = 2, locked_by = 'someone-else', owner_lock = NULL, lease_expires_at = now() + interval '1 hour' WHERE id = $1`,
        [job.id],
      );
      await waitFor(async () => returned, { what: 'the handler to return after its signal fired' });
      expect(reason).toMatchObject({ name: 'LeaseLostError' });
      expect(String((reason as Error).message)).toContain(w.id);
      // A stopped worker has written every outcome it was going to write.
      await w.stop();
      expect(await db.queue.get(job.id)).toMatchObject({ status: 'running', attempt: 2, lockedBy: 'someone-else', result: null });
      expect((await db.queue.events(job.id)).map((e) => e.type)).toEqual(['enqueued', 'claimed']);
    });
  });
});

describe('waking without polls (poll interval: one minute)', () => {
  it('runs a scheduled job at its time, from the NOTIFY payload', async () => {
    await withWorker({}, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'echo', queue, payload: 1, runAt: new Date(Date.now() + 300) });
      expect((await finished(job.id)).status).toBe('succeeded');
    });
  });

  it('finds a scheduled job enqueued before it started, through nextRunAt', async () => {
    // The job falls due after the worker's first claim, which comes back short and asks nextRunAt.
    // A worker that starts later than that claims the job at once, which proves nothing: the
    // worker's log says which claim took it, and then it all runs again with a later time.
    // Caught: the claimer ignoring nextRunAt's answer (the job then waits for the one-minute poll).
    for (let aheadMs = 500; aheadMs <= 16_000; aheadMs *= 2) {
      const queue = `q${++queueNo}`;
      const { job } = await db.queue.enqueue({ kind: 'echo', queue, payload: 1, runAt: new Date(Date.now() + aheadMs) });
      const log = watchLog();
      const w = new Worker({ databaseUrl: db.url, concurrency: 4, pollMs: 60_000, queues: [queue], logger: log.logger });
      await w.start();
      try {
        expect((await finished(job.id)).status).toBe('succeeded');
        const took = await log.line('claim', (l) => Number(l.claimed) > 0);
        if (took.reason === 'scheduled') return;
      } finally {
        await w.stop();
      }
    }
    throw new Error('every worker claimed the job at its start, even with the job 16 s ahead');
  });

  it('retries after backoff', async () => {
    await withWorker({ backoffBaseMs: 50 }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'flaky', queue, payload: { failTimes: 2 } });
      expect(await finished(job.id)).toMatchObject({ status: 'succeeded', attempt: 3, result: { attempt: 3 } });
    });
  });
});

describe('stop()', () => {
  it('releases jobs still running after the grace period and fires their signal with ShutdownError', async () => {
    let reason: unknown;
    let job: Job | undefined;
    const task = (_p: unknown, ctx: TaskContext) =>
      new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject((reason = ctx.signal.reason))));
    const queue = `q${queueNo + 1}`;
    await withWorker({ tasks: { hang: task }, shutdownGraceMs: 50 }, async () => {
      ({ job } = await db.queue.enqueue({ kind: 'hang', queue }));
      await waitFor(async () => (await db.queue.get(job!.id))?.status === 'running', { what: 'the job to run' });
    });
    expect(reason).toMatchObject({ name: 'ShutdownError' });
    expect(await db.queue.get(job!.id)).toMatchObject({ status: 'queued', attempt: 0, lastError: null });
    expect((await db.queue.events(job!.id)).map((e) => e.type)).toEqual(['enqueued', 'claimed', 'released']);
  });
});

describe('commit durability', () => {
  const setting = (w: Worker) => w['pool'].query<{ synchronous_commit: string }>('SHOW synchronous_commit').then((r) => r.rows[0].synchronous_commit);

  it('waits for the WAL flush by default, and not with asyncCommit', async () => {
    await withWorker({}, async (w) => expect(await setting(w)).toBe('on'));
    await withWorker({ asyncCommit: true }, async (w) => expect(await setting(w)).toBe('off'));
  });

  it('reads HERALD_ASYNC_COMMIT: durable unless set to 1 or true; anything else is refused', () => {
    const before = process.env.HERALD_ASYNC_COMMIT;
    const read = (v: string | undefined) => {
      if (v === undefined) delete process.env.HERALD_ASYNC_COMMIT;
      else process.env.HERALD_ASYNC_COMMIT = v;
      return loadConfig().asyncCommit;
    };
    try {
      expect([read(undefined), read('0'), read('false'), read('1'), read('true')]).toEqual([false, false, false, true, true]);
      expect(() => read('yes')).toThrow('HERALD_ASYNC_COMMIT must be 1, 0, true or false, got "yes"');
    } finally {
      read(before);
    }
  });
});
