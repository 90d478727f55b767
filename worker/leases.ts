// Renews every lease this worker holds in one batched heartbeat, a third of the way into the
// lease, so two renewals can fail before a lease runs out. The answer also tells which jobs
// were lost (abort them, never write their outcome) and which were asked to cancel.
import type { Lease, WorkService } from '../queue/services/work.ts';
import type { Logger } from '../queue/log.ts';

export interface LeaseKeeperOptions {
  work: WorkService;
  worker: string;
  leaseMs: number;
  logger: Logger;
  /** Every lease held right now: running handlers and outcomes not yet written. */
  held(): Lease[];
  lost(leases: Lease[]): void;
  cancelRequested(leases: Lease[]): void;
}

export class LeaseKeeper {
  private timer?: NodeJS.Timeout;
  private inFlight?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(private readonly opts: LeaseKeeperOptions) {}

  start(): void {
    this.schedule();
  }

  /** Renews now (a cancel notification arrived): coalesced with one in flight. */
  renewNow(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.inFlight = this.renew().finally(() => {
      this.inFlight = undefined;
      if (this.again) {
        this.again = false;
        this.renewNow();
      } else this.schedule();
    });
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.renewNow(), Math.max(10, Math.floor(this.opts.leaseMs / 3)));
  }

  private async renew(): Promise<void> {
    const leases = this.opts.held();
    if (leases.length === 0) return;
    const { logger: log } = this.opts;
    try {
      const { held, cancelRequested } = await this.opts.work.heartbeat(this.opts.worker, leases, this.opts.leaseMs);
      log.debug({ renewed: held.size, sent: leases.length }, 'leases renewed');
      const lost = leases.filter((l) => !held.has(l.id));
      if (lost.length) this.opts.lost(lost);
      if (cancelRequested.size) this.opts.cancelRequested(leases.filter((l) => cancelRequested.has(l.id)));
    } catch (err) {
      // The next renewal comes a third of a lease later; the lease outlives two misses.
      log.warn({ err: (err as Error).message, leases: leases.length }, 'lease renewal failed');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
  }
}
