/** One comparison peer of `npm run bench`: a job queue driven the same way Herald is. */
export interface PeerRunner {
  /** e.g. 'graphile', 'graphile_batched', 'pgboss', 'sql' */
  name: string;
  /**
   * Drain: N no-op jobs are inserted up front (not timed), then the peer's worker with
   * concurrency 16 processes all of them; returns jobs/s measured from worker start until
   * the last job completed.
   */
  drain(databaseUrl: string, jobs: number): Promise<number>;
  /**
   * Latency: an idle, listening worker is already running; add `count` jobs one by one,
   * `intervalMs` apart; for each, record ms from just before the add call to the moment the
   * handler starts (performance.now()). Returns the raw samples.
   */
  latency(databaseUrl: string, count: number, intervalMs: number): Promise<number[]>;
  /** Errors the library reported but we silenced during the last run (pg-boss 'error' events). */
  silencedErrors?(): number;
}
