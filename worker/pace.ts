// How fast this worker gets through jobs: handlers finished per ms over the last window. It sizes
// the claim-ahead buffer (see slots.ts): a worker buffers at most what it would start within a
// short horizon at its own measured pace, so fast no-op work moves in large claims while slow
// jobs are claimed one free slot at a time and stay in the database for idle peers.

/** Two buckets of this length: the rate covers the last 1-2 windows. */
const WINDOW_MS = 100;
/**
 * The shortest span a rate is taken over: a handful of handlers that finished within a
 * millisecond of their start says little about the rest, so that rate counts as spread over this.
 * At the 50 ms horizon, jobs that end at once in a worker's first 10 ms (fast failures, say) buy
 * at most five times their number ahead.
 */
const MIN_SPAN_MS = 10;

export class Pace {
  private current = 0;
  private previous = 0;
  /** False until the first window has passed: the rate then covers only the time since start. */
  private full = false;
  private bucketStart: number;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.bucketStart = now();
  }

  private roll(t: number): void {
    const elapsed = t - this.bucketStart;
    if (elapsed < WINDOW_MS) return;
    // One bucket passed: shift; two or more: both are stale (an idle window counts as zero).
    this.previous = elapsed < 2 * WINDOW_MS ? this.current : 0;
    this.full = true;
    this.current = 0;
    this.bucketStart = elapsed < 2 * WINDOW_MS ? this.bucketStart + WINDOW_MS : t;
  }

  /**
   * Work begins after none (the worker's start, or an idle spell): with no recent rate, the window
   * starts now. Counted from before, the idle time would dilute the first windows' rate, and a
   * worker that starts against a backlog would claim small for its first ~150 ms.
   */
  resume(): void {
    const t = this.now();
    this.roll(t);
    if (this.current + this.previous > 0) return;
    this.bucketStart = t;
    this.full = false;
  }

  /** A handler finished. */
  tick(): void {
    this.roll(this.now());
    this.current++;
  }

  /** Jobs this worker would finish in `horizonMs` at its recent pace (0 when it has none yet). */
  within(horizonMs: number): number {
    const t = this.now();
    this.roll(t);
    const covered = Math.max(MIN_SPAN_MS, t - this.bucketStart + (this.full ? WINDOW_MS : 0));
    return Math.floor(((this.current + this.previous) / covered) * horizonMs);
  }
}

/**
 * The claim-ahead horizon (ms): `aheadMs`, or two claims' time when claims take longer (up to
 * 4 x aheadMs). The buffer is refilled when half empty, so it must outlast a claim, or the slots
 * idle while the next one runs, the pace they set drops and the claims shrink with it. An idle
 * peer cannot start a job before its own claim returns either.
 */
export function aheadHorizon(aheadMs: number, claimMs = 0): number {
  return Math.max(aheadMs, Math.min(4 * aheadMs, 2 * claimMs));
}
