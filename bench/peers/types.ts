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

/** One durable-execution runner of `npm run bench -- --durable`: Herald's ctx.step & co., or a peer's. */
export interface DurableRunner {
  name: string;
  /**
   * `jobs` workflows of `steps` sequential no-op steps, run `concurrency` at a time, all queued at
   * once to an idle worker: steps per second from the first enqueue to the last workflow's end
   * (its end written), and each step call's time in ms (the call and its write).
   */
  steps(databaseUrl: string, jobs: number, steps: number, concurrency: number): Promise<{ stepsPerSecond: number; stepMs: number[] }>;
  /** `count` workflows one after another, each sleeping SLEEP_MS (harness.ts) once: ms from the sleep call to the line after it. */
  sleepBriefly(databaseUrl: string, count: number): Promise<number[]>;
  /**
   * `count` workflows one after another, each waiting for a signal (a message) named `go`, sent once
   * it waits: ms from just before the send to the line after the wait.
   */
  signal(databaseUrl: string, count: number): Promise<number[]>;
}
