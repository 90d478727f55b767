// THE tailer: one per server process. It follows herald.job_events gap-free through
// FeedService.feed(cursor) (rows below the transaction horizon, in (tx, id) order; see queue/sql/feed.ts)
// and publishes each page to the in-memory fan-out. It reads when the NOTIFY tick on
// herald_events says there is something new, and on a short safety timer in case a tick was
// lost (listener down, pooler). A read goes page by page until it is caught up.
// While no stream or `?wait` follows the fan-out it is idle: ticks start no read, only the safety
// timer does (metrics and alerts lose nothing, they only hear later). The first follower wakes it.
import type { Logger } from 'pino';
import type { FeedService } from '../../queue/services/feed.ts';
import { formatCursor, parseCursor, type Cursor } from '../../queue/cursor.ts';
import type { Fanout } from './fanout.ts';

/** Held back this long at one position, the tailer looks up other databases' transactions (see afterCaughtUp). */
const LEARN_AFTER_MS = 10;
/**
 * Held back, or after a failed read, the re-reads back off, but never past this: the hold ends
 * (or the database comes back) with no tick of its own (the blocker may be another database's, or
 * have committed already), so the gap after it is this wait, and a tailer with a long safety
 * interval (tests use a minute) would otherwise wait it out.
 */
const RETRY_MAX_MS = 1000;
/** The first re-read after a failed read: a dropped connection is back by then, a down database is not asked every millisecond. */
const FAILED_RETRY_MS = 100;

export interface TailerOptions {
  /** Safety-net read interval. */
  safetyMs?: number;
  /** After a read that found events, the next one waits this long: under load each read takes a bigger bite. */
  busyGapMs?: number;
  pageSize?: number;
  logger?: Logger;
}

export class Tailer {
  /** The newest event published; a live-only stream starts right after it. */
  position!: Cursor;
  /** False after a failed read, until one succeeds. */
  dbUp = true;
  /** When the tailer last had nothing left to read (Date.now()), or null before that. */
  caughtUpAt: number | null = null;

  private running = false;
  /** A tick came while idle, after the last read began: the first follower wakes the tailer for it. */
  private missedTick = false;
  /** Reads begun so far; `caughtUp` waits for one begun after its call. */
  private reads = 0;
  private readonly readWaiters: { after: number; resolve: () => void }[] = [];
  /** A notification came: the next read first waits for its sender's skipping companions. */
  private barrierDue = false;
  private again = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private retryDelay = 0;
  private idle?: Promise<void>;
  private gapTimer?: NodeJS.Timeout;
  private lastReadAt = 0;
  private lastReadFound = false;
  /** Held back at one position: since when (or since other databases were last looked up there). */
  private stuck?: { at: string; since: number };
  private readonly safetyMs: number;
  private readonly busyGapMs: number;
  private readonly pageSize: number;

  constructor(
    private readonly feed: Pick<FeedService, 'head' | 'feed' | 'backlog' | 'learnOtherDatabases' | 'passEventsBarrier'>,
    private readonly fanout: Fanout,
    private readonly opts: TailerOptions = {},
  ) {
    this.safetyMs = opts.safetyMs ?? 250;
    this.busyGapMs = opts.busyGapMs ?? 5;
    this.pageSize = opts.pageSize ?? 1000;
    fanout.onListening(() => {
      if (this.missedTick) this.wake(true);
    });
  }

  /** Starts at the current head: what happened before is for replays, read from the database. */
  async start(): Promise<void> {
    this.position = await this.feed.head();
    this.caughtUpAt = Date.now();
    this.timer = setInterval(() => this.wake(), this.safetyMs);
    this.timer.unref();
  }

  /** Stream lag: how long since the tailer last had read everything there was. */
  lagMs(now = Date.now()): number | null {
    return this.caughtUpAt === null ? null : Math.max(0, now - this.caughtUpAt);
  }

  /**
   * Asks for a read. A call during a read makes it go round once more, so no tick is lost.
   * When idle the read starts at once (lowest latency); right after a read that found events
   * it waits out `busyGapMs`, so a flood of ticks becomes a few reads of many rows each.
   * `notified`: a herald_events notification asked for it (see drain).
   */
  wake(notified = false): void {
    if (this.stopped) return;
    if (notified) {
      // Idle, the tick is only remembered: the safety read needs no barrier, a follower's first read does.
      if (!this.fanout.listening) {
        this.missedTick = true;
        return;
      }
      this.barrierDue = true;
    }
    if (this.running) {
      this.again = true;
      return;
    }
    const wait = this.lastReadFound ? this.lastReadAt + this.busyGapMs - Date.now() : 0;
    if (wait > 0) {
      this.gapTimer ??= setTimeout(() => {
        this.gapTimer = undefined;
        this.wake();
      }, wait);
      return;
    }
    this.idle = this.drain();
  }

  /**
   * Resolves once a read begun after this call has ended (caught up or failed). An idle tailer is
   * up to a safety interval behind: a stream that starts then waits for this, so its live buffer
   * does not begin with that backlog.
   */
  caughtUp(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.readWaiters.push({ after: this.reads, resolve }));
    if (this.missedTick) this.barrierDue = true;
    this.wake();
    return done;
  }

  private async drain(): Promise<void> {
    this.running = true;
    this.again = false;
    this.missedTick = false;
    const read = ++this.reads;
    this.lastReadAt = Date.now();
    let found = 0;
    try {
      // Transactions that committed alongside the notification's sender skipped their own:
      // wait for them before reading (queue/sql/wake.ts). Only after a notification; a timer's
      // read needs no barrier.
      if (this.barrierDue) {
        this.barrierDue = false;
        // A failed pass stays due, so the retried read passes it (as the worker's heard queues do).
        const passed = await this.feed.passEventsBarrier().catch((err: unknown) => {
          this.barrierDue = true;
          throw err;
        });
        // Given up on: a sender's companion is still inside its COMMIT, and it skipped its NOTIFY.
        // Read what is there, then wait for it again (each wait is bounded), not for the safety read.
        if (!passed) {
          this.opts.logger?.debug('gave up waiting at the events wake-up barrier; waiting again');
          this.barrierDue = true;
          this.again = true;
        }
      }
      let page;
      do {
        page = await this.feed.feed(this.position, this.pageSize);
        if (this.stopped) return;
        if (page.length > 0) {
          // Position and publish in one synchronous step: a stream that subscribes and reads
          // `position` between two pages neither misses nor repeats an event.
          this.position = parseCursor(page[page.length - 1].cursor);
          this.fanout.publish(page);
          found += page.length;
        }
      } while (page.length === this.pageSize);
      await this.afterCaughtUp();
      if (!this.dbUp) this.opts.logger?.info('event tailer reads the database again');
      this.dbUp = true;
    } catch (err) {
      if (this.dbUp) this.opts.logger?.warn({ err: (err as Error).message }, 'event tailer cannot read the database; retrying');
      this.dbUp = false;
      this.retrySoon(FAILED_RETRY_MS);
    } finally {
      this.lastReadFound = found > 0;
      this.running = false;
      this.settleWaiters(read);
    }
    if (this.again) this.wake();
  }

  // A committed transaction whose events sit above the horizon (an older one is still open)
  // sent its tick already; re-read in a few ms rather than at the next safety tick. Events below
  // the horizon now, past the position, mean the blocker ended after the read took its snapshot
  // (or a commit came since): re-read at once, as no tick will come for the first. Stuck at one
  // position for LEARN_AFTER_MS, the blocker may be another database's transaction the horizon
  // does not know of yet: look them up (a read of pg_locks and pg_stat_activity, too dear for
  // every read; at most once per LEARN_AFTER_MS while stuck), and re-read at once if one was new.
  private async afterCaughtUp(): Promise<void> {
    const backlog = await this.feed.backlog(this.position);
    if (backlog !== 'held') {
      this.stuck = undefined;
      this.retryDelay = 0;
      if (backlog === 'none') this.caughtUpAt = Date.now();
      else if (this.fanout.listening) this.again = true;
      return;
    }
    const at = this.cursor;
    if (this.stuck?.at !== at) {
      // Moved on since the last hold: a new hold, so retries start short again. Under load every
      // read can end held (another database's new transaction the list does not know yet); a
      // delay kept from read to read would double each time and leave the last tick's events
      // waiting for the safety read.
      this.stuck = { at, since: Date.now() };
      this.retryDelay = 0;
    } else if (Date.now() - this.stuck.since >= LEARN_AFTER_MS) {
      this.stuck.since = Date.now();
      if (await this.feed.learnOtherDatabases()) this.retryDelay = 0;
    }
    this.retrySoon(1);
  }

  // Reads again after a delay that doubles from `firstMs` each time it is asked for in a row, up
  // to RETRY_MAX_MS (or the safety interval). Idle, the safety timer's read is soon enough.
  private retrySoon(firstMs: number): void {
    if (!this.fanout.listening) return;
    this.retryDelay = Math.min(this.safetyMs, RETRY_MAX_MS, Math.max(firstMs, this.retryDelay * 2));
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.wake(), this.retryDelay);
    this.retryTimer.unref();
  }

  private settleWaiters(read: number): void {
    for (let i = this.readWaiters.length - 1; i >= 0; i--) {
      const w = this.readWaiters[i];
      if (w.after < read) {
        this.readWaiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  get cursor(): string {
    return formatCursor(this.position);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.retryTimer);
    clearTimeout(this.gapTimer);
    await this.idle?.catch(() => {});
    this.settleWaiters(Infinity);
  }
}
