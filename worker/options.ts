// A worker's settings, each with what it does. Their defaults live in queue/defaults.ts
// (DEFAULTS), and the environment variables that set them are read in queue/config.ts.
import type { Logger } from '../queue/log.ts';
import type { Task } from './tasks.ts';

export interface WorkerOptions {
  databaseUrl: string;
  /** A direct session for LISTEN and the liveness lock; defaults to databaseUrl. */
  listenUrl?: string;
  /** Queues to take; undefined or empty = all. */
  queues?: string[];
  concurrency: number;
  tasksDir?: string;
  /** Tasks registered in-process (tests, the bench); a --tasks DIR file of the same kind wins. */
  tasks?: Record<string, Task>;
  capabilities?: string[];
  leaseMs?: number;
  pollMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  shutdownGraceMs?: number;
  /** Finished jobs older than this are deleted; 0 keeps them. */
  retentionMs?: number;
  /** Largest claim, whatever the free slots. */
  maxClaim?: number;
  /**
   * Claim-ahead horizon: while the queue has a backlog, claim beyond the free slots as many jobs
   * as this worker starts in this many ms at its measured pace (or in two claims' time when claims
   * take longer, up to 4x this), and hold them in a local buffer (leased and renewed). 0 claims
   * free slots only.
   */
  claimAheadMs?: number;
  /** A buffered job not started after this long goes back to the queue (attempt refunded). */
  claimAheadTtlMs?: number;
  /**
   * Commit the worker's own writes (claims, renewals, outcomes) without waiting for the WAL flush
   * (synchronous_commit=off on its pool; default false, HERALD_ASYNC_COMMIT). A database crash can
   * then undo the last few hundred ms of them: undone outcomes run again. Enqueues never use this pool.
   */
  asyncCommit?: boolean;
  reapEveryMs?: number;
  /** How long a worker whose listener was cut has to renew before its jobs are re-run (HERALD_LOCK_LOSS_GRACE_MS). */
  lockLossGraceMs?: number;
  /** Run the scheduler of recurring jobs (default true: every worker does; one acts per tick). */
  scheduler?: boolean;
  logger?: Logger;
}
