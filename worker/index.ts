// The worker runtime: `herald worker` and in-process use (tests, the bench).
import { Worker } from './worker.ts';
import type { WorkerOptions } from './options.ts';

export { Worker, workerId } from './worker.ts';
export type { WorkerOptions } from './options.ts';
export type { Task, TaskContext } from './tasks.ts';
export { InvokedJobError, JobCancelledError, LeaseLostError, ShutdownError, UnknownKindError, UnrecoverableError } from './errors.ts';
export type { InvokeOptions } from './durable.ts';

/** Starts a worker; resolves once it listens (or polls, when LISTEN is impossible). */
export async function startWorker(opts: WorkerOptions): Promise<{ id: string; stop(): Promise<void> }> {
  const worker = new Worker(opts);
  await worker.start();
  return worker;
}
