// Which worker runs what, and stopping a job: capabilities, --tasks DIR, and cancel.
import { beforeAll, expect, it } from 'vitest';
import type { TestDatabase } from './support/db.ts';
import { TASKS_DIR, workerTestContext, type WorkerProcess } from './fixtures/worker-process.ts';
import { waitFor } from './support/wait.ts';

const t = workerTestContext();
let db: TestDatabase;
let plain: WorkerProcess;
let gpu: WorkerProcess;

beforeAll(async () => {
  db = t.db;
  const env = { HERALD_POLL_MS: '60000' };
  [plain, gpu] = await Promise.all([
    t.spawn({ env, args: ['--concurrency', '4'] }),
    t.spawn({ env, args: ['--concurrency', '4', '--capabilities', 'gpu', '--tasks', TASKS_DIR] }),
  ]);
});

const finished = (ids: string[]) =>
  waitFor(async () => {
    const jobs = await Promise.all(ids.map((id) => db.queue.get(id)));
    return jobs.every((j) => j && ['succeeded', 'failed', 'cancelled'].includes(j.status)) ? jobs.map((j) => j!) : null;
  }, { what: `jobs ${ids.join(', ')} to finish` });

it('gives a job that requires gpu only to the worker with --capabilities gpu', async () => {
  const enqueued = await db.queue.enqueueMany(
    Array.from({ length: 12 }, (_, i) => ({ kind: 'sleep', payload: { ms: 20 }, requires: i % 2 ? ['gpu'] : [] })),
  );
  const jobs = await finished(enqueued.map((e) => e.job.id));
  for (const job of jobs) expect(job.status).toBe('succeeded');
  const workerOf = async (id: string) => (await db.queue.events(id)).find((e) => e.type === 'claimed')!.worker;
  for (const job of jobs.filter((j) => j.requires.includes('gpu'))) expect(await workerOf(job.id)).toBe(gpu.id);
});

it('runs task files from --tasks DIR (TypeScript and JavaScript) only on the worker that has them', async () => {
  const [upper, shout] = await db.queue.enqueueMany([
    { kind: 'upper', payload: { text: 'herald' } },
    { kind: 'shout', payload: { text: 'hi' } },
  ]);
  const jobs = await finished([upper.job.id, shout.job.id]);
  expect(jobs.map((j) => j.result)).toEqual([{ text: 'HERALD' }, 'hi!']);
  for (const j of jobs) expect((await db.queue.events(j.id)).find((e) => e.type === 'claimed')!.worker).toBe(gpu.id);
  // The plain worker never claimed a kind it has no task for.
  expect(plain.logs.some((l) => l.msg === 'job started' && (l.kind === 'upper' || l.kind === 'shout'))).toBe(false);
});

it('leaves a kind no worker has a task for queued, untouched', async () => {
  const { job } = await db.queue.enqueue({ kind: 'nobody-has-this' });
  // A job enqueued after it, on the same queue, runs: the unknown one was passed over.
  const { job: later } = await db.queue.enqueue({ kind: 'echo', payload: 1 });
  await finished([later.id]);
  expect(await db.queue.get(job.id)).toMatchObject({ status: 'queued', attempt: 0, lockedBy: null });
  expect((await db.queue.events(job.id)).map((e) => e.type)).toEqual(['enqueued']);
});

it('cancels a running sleep: its signal fires and the job ends cancelled', async () => {
  const { job } = await db.queue.enqueue({ kind: 'sleep', payload: { ms: 120_000 } });
  await waitFor(async () => (await db.queue.get(job.id))?.status === 'running', { what: 'the sleep to start' });
  await db.queue.cancel(job.id);
  const [done] = await finished([job.id]);
  expect(done).toMatchObject({ status: 'cancelled', attempt: 1, result: null, cancelRequested: true });
  expect(done.lastError).toMatchObject({ name: 'JobCancelledError', message: `job ${job.id} was cancelled on request` });
  expect((await db.queue.events(job.id)).map((e) => e.type)).toEqual(['enqueued', 'claimed', 'cancel_requested', 'cancelled']);
});
