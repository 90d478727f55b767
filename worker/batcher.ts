// Collects items and hands them to `flush` in batches: after `delayMs`, or at once when
// `maxSize` are waiting (or always at once with a delay of 0: then a lone item waits for nothing,
// and only what arrives during a flush is batched). One flush in flight at a time; whatever
// arrives meanwhile forms the next batch, so batches grow by themselves under load. A flush that
// throws is retried with backoff (the database may be restarting); items are never dropped while
// the worker runs.
import type { Logger } from '../queue/log.ts';

export interface BatcherOptions<T> {
  name: string;
  maxSize: number;
  delayMs: number;
  flush(items: T[]): Promise<void>;
  logger: Logger;
}

const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2_000;
/** When draining for shutdown, give up on a database that stays unreachable this long. */
const DRAIN_GIVE_UP_MS = 10_000;

export class Batcher<T> {
  private items: T[] = [];
  private timer?: NodeJS.Timeout;
  private inFlight?: Promise<void>;
  private drainingSince: number | null = null;

  constructor(private readonly opts: BatcherOptions<T>) {}

  get pending(): number {
    return this.items.length;
  }

  add(item: T): void {
    this.items.push(item);
    if (this.inFlight) return; // the flush in flight schedules the next one
    this.schedule();
  }

  private schedule(): void {
    if (this.items.length >= this.opts.maxSize || this.opts.delayMs === 0) this.kick();
    else this.timer ??= setTimeout(() => this.kick(), this.opts.delayMs);
  }

  private kick(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight || this.items.length === 0) return;
    const batch = this.items.splice(0, this.opts.maxSize);
    this.inFlight = this.run(batch).finally(() => {
      this.inFlight = undefined;
      if (this.drainingSince !== null) this.kick();
      else if (this.items.length > 0) this.schedule();
    });
  }

  private async run(batch: T[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.opts.flush(batch);
        return;
      } catch (err) {
        if (this.drainingSince !== null && Date.now() - this.drainingSince > DRAIN_GIVE_UP_MS) {
          this.opts.logger.error(
            { err: (err as Error).message, batch: this.opts.name, items: batch.length },
            'giving up on writing outcomes at shutdown; the reaper will re-run these jobs',
          );
          return;
        }
        const wait = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (attempt - 1));
        this.opts.logger.warn({ err: (err as Error).message, batch: this.opts.name, items: batch.length, attempt, retryInMs: wait }, 'batch write failed; retrying');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  /** Flushes everything now and resolves when all is written (or given up on). */
  async drain(): Promise<void> {
    this.drainingSince ??= Date.now();
    while (this.items.length > 0 || this.inFlight) {
      this.kick();
      await this.inFlight;
    }
  }
}
