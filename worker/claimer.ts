// Decides when to claim. NOTIFY is the engine; timers are the safety net (a notification can be
// lost while the listener reconnects, or never come behind a pooler), never the main path.
//
// - A wake-up (notification, poll, scheduled time, reconnect) claims at once if a slot is free,
//   else as soon as one frees.
// - Never more than one claim in flight: a wake-up during a claim makes another claim after it.
// - A claim that comes back full means more work is likely waiting: claim again as slots free.
// - A claim that comes back short asks when the next scheduled job is due and sets a timer.
import type { Logger } from '../queue/log.ts';

export interface ClaimerOptions {
  pollMs: number;
  maxBatch: number;
  logger: Logger;
  freeSlots(): number;
  /** Claims up to `limit` jobs and starts them; returns how many it got. `reason`: the wake-up's. */
  claim(limit: number, reason: string): Promise<number>;
  /**
   * When the next scheduled job this worker could take becomes runnable (epoch ms), or null; jobs
   * that became runnable in the last `sinceMs` count too (the claim that just came back began then).
   */
  nextRunAt(sinceMs: number): Promise<number | null>;
}

const MAX_TIMER_MS = 2 ** 31 - 1;
/** Floor for a re-armed timer whose time already came once (a clock behind the database's). */
const SAME_TIME_AGAIN_MS = 50;

export class Claimer {
  private wanted = false;
  private reason = 'start';
  private inFlight?: Promise<void>;
  private pumpQueued = false;
  private stopped = false;
  private failures = 0;
  private pollTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private dueTimer?: NodeJS.Timeout;
  private dueAt: number | null = null;
  private lastDueAt = 0;
  /** The last claim came back full: more work is probably waiting (it may be claimed ahead). */
  backlogged = false;

  constructor(private readonly opts: ClaimerOptions) {}

  start(): void {
    this.schedulePoll();
  }

  wake(reason: string): void {
    if (this.stopped) return;
    // The latest reason: a wake-up that finds the slots taken says what it was (see pump).
    this.reason = reason;
    this.wanted = true;
    this.pump();
  }

  /** A handler finished. Deferred a turn, so slots that free together make one claim, not many. */
  slotFreed(): void {
    if (!this.wanted || this.pumpQueued || this.stopped) return;
    this.pumpQueued = true;
    setImmediate(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  /** A job becomes runnable at `at` (epoch ms): wake then, unless an earlier wake-up is set. */
  dueAtTime(at: number): void {
    if (this.stopped || (this.dueAt !== null && this.dueAt <= at)) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    let delay = at - Date.now();
    if (at <= this.lastDueAt) delay = Math.max(delay, SAME_TIME_AGAIN_MS);
    this.dueTimer = setTimeout(() => {
      this.lastDueAt = at;
      this.dueAt = null;
      this.wake('scheduled');
    }, Math.min(MAX_TIMER_MS, Math.max(1, delay)));
  }

  private pump(): void {
    if (this.stopped || this.inFlight || !this.wanted) return;
    const free = this.opts.freeSlots();
    if (free <= 0) {
      // Says that a wake-up came and found every slot taken (tests wait for it).
      if (this.opts.logger.isLevelEnabled('debug')) this.opts.logger.debug({ reason: this.reason }, 'claim deferred: no free slot');
      return;
    }
    this.wanted = false;
    const limit = Math.min(free, this.opts.maxBatch);
    this.inFlight = this.claimOnce(limit, this.reason).finally(() => {
      this.inFlight = undefined;
      this.pump();
    });
  }

  private async claimOnce(limit: number, reason: string): Promise<void> {
    const log = this.opts.logger;
    let got: number;
    const t0 = performance.now();
    try {
      got = await this.opts.claim(limit, reason);
    } catch (err) {
      // The database may be restarting: try again soon, backing off up to the poll interval.
      this.failures++;
      const wait = Math.min(this.opts.pollMs, 50 * 2 ** Math.min(this.failures, 10));
      log.warn({ err: (err as Error).message, retryInMs: wait }, 'claim failed');
      clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => this.wake('retry'), wait);
      return;
    }
    this.failures = 0;
    this.backlogged = got === limit;
    if (log.isLevelEnabled('debug')) log.debug({ reason, limit, claimed: got, ms: Math.round(performance.now() - t0) }, 'claim');
    if (got === limit) {
      this.reason = 'full batch';
      this.wanted = true;
    } else if (!this.wanted) {
      // Reaching back to the claim's start: a job that became runnable while it ran is not left behind.
      this.opts.nextRunAt(performance.now() - t0 + 1).then(
        (at) => at !== null && this.dueAtTime(at),
        (err) => log.warn({ err: (err as Error).message }, 'could not read the next scheduled time'),
      );
    }
  }

  private schedulePoll(): void {
    if (this.stopped) return;
    // Jitter keeps a fleet of workers from polling in step.
    const delay = this.opts.pollMs * (0.9 + 0.2 * Math.random());
    this.pollTimer = setTimeout(() => {
      this.opts.logger.debug('poll');
      this.wake('poll');
      this.schedulePoll();
    }, delay);
  }

  /** Stops claiming; resolves when a claim in flight has returned (its jobs have started). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.pollTimer);
    clearTimeout(this.retryTimer);
    clearTimeout(this.dueTimer);
    await this.inFlight;
  }
}
