// Renews every lease this worker holds in one batched heartbeat, a third of the way into the
// lease, so two renewals can fail before a lease runs out; a failed one is retried at once
// (RENEW_RETRY_MS), since after a blip the leases may be down to the reaper's grace. The answer
// also tells which jobs were lost (abort them, never write their outcome) and which were asked
// to cancel. Each renewal records the liveness key held now, so the jobs follow a key the
// listener had to change.
//
// When no renewal reaches the database, a job's handler is stopped at its lease's local deadline:
// the lease as this worker counts it, from the last claim or renewal that got through, a little
// short (LOCAL_DEADLINE_SHARE). After a cut listener the reaper may cut the lease to its grace, so
// then the grace counts. Past that the job may be another worker's: never run it twice at once.
import type { Lease, WorkService } from '../queue/services/work.ts';
import type { Logger } from '../queue/log.ts';
import { LOCAL_DEADLINE_SHARE, RENEW_RETRY_MS } from '../queue/defaults.ts';

export interface LeaseKeeperOptions {
  work: WorkService;
  worker: string;
  leaseMs: number;
  /** The reaper's grace for jobs whose owner's liveness key vanished (DEFAULTS.lockLossGraceMs). */
  lockLossGraceMs: number;
  logger: Logger;
  /** The liveness key held right now (null while the listener is down): each renewal records it on the jobs. */
  ownerLock(): number | null;
  /** Every lease held right now: running handlers and outcomes not yet written. */
  held(): Lease[];
  lost(leases: Lease[]): void;
  cancelRequested(leases: Lease[]): void;
  /** These leases reached the database: they last until `deadline` (performance.now()). */
  renewed(leases: Lease[], deadline: number): void;
  /** Every lease may end by `deadline` unless renewed first (the listener was cut). */
  cutShort(deadline: number): void;
  /** Stop the handlers whose local deadline is before `now`. */
  overdue(now: number): void;
}

/** When a lease of `spanMs` granted by a write sent at `sentAt` runs out, as this worker counts it. */
const localDeadline = (sentAt: number, spanMs: number) => sentAt + spanMs * LOCAL_DEADLINE_SHARE;

export class LeaseKeeper {
  private timer?: NodeJS.Timeout;
  private deadlineCheck?: NodeJS.Timeout;
  private inFlight?: Promise<void>;
  private again = false;
  private stopped = false;
  /** When the listener was last cut (performance.now()). */
  private cutAt = -Infinity;

  constructor(private readonly opts: LeaseKeeperOptions) {}

  start(): void {
    this.schedule(this.opts.leaseMs / 3);
    // A tenth of the margin the local deadline keeps: the handler stops well before the lease ends.
    const everyMs = Math.max(10, (Math.min(this.opts.leaseMs, this.opts.lockLossGraceMs) * (1 - LOCAL_DEADLINE_SHARE)) / 2);
    this.deadlineCheck = setInterval(() => this.opts.overdue(performance.now()), everyMs);
    this.deadlineCheck.unref();
  }

  /** Renews now (a cancel notification arrived, the listener came back): coalesced with one in flight. */
  renewNow(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    let ok = false;
    this.inFlight = this.renew()
      .then((r) => {
        ok = r;
      })
      .finally(() => {
        this.inFlight = undefined;
        if (this.again) {
          this.again = false;
          this.renewNow();
        } else this.schedule(ok ? this.opts.leaseMs / 3 : RENEW_RETRY_MS);
      });
  }

  /**
   * The listener was cut: its liveness key may be gone, and the reaper then gives our jobs the
   * grace only. Renew at once (without a key), and stop the handlers if that cannot land in time.
   */
  cut(): void {
    this.cutAt = performance.now();
    this.opts.cutShort(localDeadline(this.cutAt, this.opts.lockLossGraceMs));
    this.renewNow();
  }

  /**
   * The local deadline of a lease granted by a write (a claim) sent at `sentAt`: a cut since then
   * may have left it with the grace only.
   */
  deadline(sentAt: number): number {
    const lease = localDeadline(sentAt, this.opts.leaseMs);
    return this.cutAt > sentAt ? Math.min(lease, localDeadline(this.cutAt, this.opts.lockLossGraceMs)) : lease;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.renewNow(), Math.max(10, Math.floor(ms)));
  }

  /** False when the renewal did not reach the database. */
  private async renew(): Promise<boolean> {
    const leases = this.opts.held();
    if (leases.length === 0) return true;
    const { logger: log } = this.opts;
    const sentAt = performance.now();
    try {
      const { held, cancelRequested } = await this.opts.work.heartbeat(this.opts.worker, leases, this.opts.leaseMs, this.opts.ownerLock());
      log.debug({ renewed: held.size, sent: leases.length }, 'leases renewed');
      // Sent before a cut, it may have recorded the key that was lost: the renewal the cut asked
      // for decides.
      if (this.cutAt < sentAt) this.opts.renewed(leases.filter((l) => held.has(l.id)), localDeadline(sentAt, this.opts.leaseMs));
      const lost = leases.filter((l) => !held.has(l.id));
      if (lost.length) this.opts.lost(lost);
      if (cancelRequested.size) this.opts.cancelRequested(leases.filter((l) => cancelRequested.has(l.id)));
      return true;
    } catch (err) {
      log.warn({ err: (err as Error).message, leases: leases.length, retryMs: RENEW_RETRY_MS }, 'lease renewal failed');
      return false;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.deadlineCheck);
    await this.inFlight;
  }
}
