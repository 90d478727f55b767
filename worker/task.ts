// What a task handler is: `async (payload, ctx) => result`. Apart from the loader (tasks.ts), so
// the built-in tasks can name the type without importing the loader that imports them.
import type { Job } from '../queue/job.ts';
import type { Logger } from '../queue/log.ts';
import type { Parent } from '../queue/services/flows.ts';

export interface TaskContext {
  job: Job;
  /** The job's parents ({id, ref, kind, status, result}) in dependsOn order; [] for a job without any. */
  parents: Parent[];
  /** Fires on cancel, lost lease or shutdown; `signal.reason` says which. */
  signal: AbortSignal;
  /** Reports progress (0..100); also renews the lease. */
  progress(percent: number, message?: string): Promise<void>;
  log: Logger;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Task = (payload: any, ctx: TaskContext) => unknown;
