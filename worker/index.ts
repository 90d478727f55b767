// The worker runtime: `herald worker` and in-process use (tests, the bench).
import { Worker, type WorkerOptions } from './worker.ts';

export { Worker, workerId, type WorkerOptions } from './worker.ts';
export type { Task, TaskContext } from './tasks.ts';
export { InvokedJobError, JobCancelledError, LeaseLostError, ShutdownError, UnknownKindError, UnrecoverableError } from './errors.ts';
export type { InvokeOptions } from './durable.ts';

/** Starts a worker; resolves once it listens (or polls, when LISTEN is impossible). */
export async function startWorker(opts: WorkerOptions): Promise<{ id: string; stop(): Promise<void> }> {
  const worker = new Worker(opts);
  await worker.start();
  return worker;
}
