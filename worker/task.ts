// What a task handler is: `async (payload, ctx) => result`. Apart from the loader (tasks.ts), so
// the built-in tasks can name the type without importing the loader that imports them.
import type { Job } from '../queue/job.ts';
import type { Logger } from '../queue/log.ts';
import type { Parent } from '../queue/services/flows.ts';
import type { InvokeOptions } from './durable.ts';

export interface TaskContext {
  job: Job;
  /** The job's parents ({id, ref, kind, status, result}) in dependsOn order; [] for a job without any. */
  parents: Parent[];
  /** Fires on cancel, lost lease or shutdown; `signal.reason` says which. */
  signal: AbortSignal;
  /** Reports progress (0..100); also renews the lease. */
  progress(percent: number, message?: string): Promise<void>;
  log: Logger;
  /**
   * Runs `fn` once for this job: its JSON result is stored, and every later run of the job (after a
   * crash, a retry, a sleep or a wait) gets it back here without calling `fn`. The n-th call of a
   * name in a run finds the n-th stored result of that name.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /** Ends the run with its slot freed; the job comes back after `ms` and replays to here. */
  sleep(ms: number): Promise<void>;
  /** As sleep, until a time. */
  sleepUntil(date: Date | string | number): Promise<void>;
  /**
   * The job's signal `name` (POST /api/jobs/:id/signals/:name), waited for with the slot free; null
   * when `timeoutMs` passes first. A signal sent before this call is returned at once.
   */
  waitFor<T = unknown>(name: string, opts?: { timeoutMs?: number }): Promise<T | null>;
  /**
   * Enqueues a child job and waits for it with the slot free: its result, or an InvokedJobError
   * when it failed or was cancelled. A replay finds the same child; it is never enqueued twice.
   */
  invoke<T = unknown>(kind: string, payload?: unknown, options?: InvokeOptions): Promise<T>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Task = (payload: any, ctx: TaskContext) => unknown;
