// One running job's progress reports, coalesced: a handler that reports per item (10^5 calls)
// writes at most one event per `everyMs`, each carrying the newest value, and the last value is
// always written (by the next tick, or by flush() when the handler returns, before its outcome).
// A report that is not written at once resolves at once: the value waits for the next write.
import { checkPercent } from '../queue/services/work.ts';

type Write = (percent: number, message: string | undefined) => Promise<void>;

export class ProgressCoalescer {
  private pending: { percent: number; message: string | undefined } | null = null;
  private inFlight: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private lastAt = -Infinity;

  constructor(
    private readonly write: Write,
    private readonly everyMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  report(percent: number, message?: string): Promise<void> {
    // Checked here: a coalesced report never reaches the write that would refuse it.
    try {
      checkPercent(percent);
    } catch (err) {
      return Promise.reject(err);
    }
    this.pending = { percent, message };
    if (this.inFlight || this.timer) return Promise.resolve();
    const wait = this.lastAt + this.everyMs - this.now();
    if (wait > 0) {
      this.schedule(wait);
      return Promise.resolve();
    }
    return this.drain();
  }

  /** Writes the newest value if it is not written yet; no timer is left behind. */
  async flush(): Promise<void> {
    for (;;) {
      clearTimeout(this.timer);
      this.timer = undefined;
      if (this.inFlight) await this.inFlight.catch(() => undefined);
      else if (this.pending) await this.drain().catch(() => undefined);
      else return;
    }
  }

  private schedule(wait: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.drain().catch(() => undefined); // the writer logs its own failures
    }, Math.max(0, wait));
  }

  private drain(): Promise<void> {
    const p = this.pending;
    if (!p) return Promise.resolve();
    this.pending = null;
    this.lastAt = this.now();
    const write = this.write(p.percent, p.message).finally(() => {
      this.inFlight = null;
      if (this.pending && !this.timer) this.schedule(this.lastAt + this.everyMs - this.now());
    });
    this.inFlight = write;
    return write;
  }
}
