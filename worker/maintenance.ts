// Housekeeping every worker runs: the reaper (about every half second; a SIGKILLed worker's
// vanished liveness lock gives its jobs a short lease, the grace (lockLossGraceMs), and a pass right after
// it re-runs them: within ~2 s), with it the expiry pass (queued
// jobs past their expireAt end cancelled) and the removal of dead workers' registry rows; and
// retention cleanup and the pruning of old rate-window records (about every minute), and the
// queue-history rollup (about every 10 s). The core's advisory try-lock lets only one reaper work at a time, so a fleet of
// workers costs one cheap "lock busy" statement each. Jitter keeps them out of step.
import type { MaintainService } from '../queue/services/maintain.ts';
import type { Logger } from '../queue/log.ts';
import { Every } from '../queue/every.ts';
import { DEFAULTS, REAP_EVERY_MS } from '../queue/defaults.ts';
import { historyRollup } from '../queue/history-rollup.ts';

export interface MaintenanceOptions {
  maintain: MaintainService;
  logger: Logger;
  reapEveryMs?: number;
  /** How long a worker whose liveness lock vanished has to renew (DEFAULTS.lockLossGraceMs). */
  lockLossGraceMs?: number;
  cleanupEveryMs?: number;
  historyEveryMs?: number;
  /** Finished jobs older than this are deleted; 0 keeps them for ever. */
  retentionMs: number;
}

export class Maintenance {
  private readonly jobs: Every[] = [];
  private orphanTimer?: NodeJS.Timeout;

  constructor(private readonly opts: MaintenanceOptions) {}

  private async reap(): Promise<void> {
    const { maintain, logger: log } = this.opts;
    const graceMs = this.opts.lockLossGraceMs ?? DEFAULTS.lockLossGraceMs;
    const r = await maintain.reap(undefined, graceMs);
    if (r.requeued + r.failed + r.cancelled > 0) log.info(r, 'reaped jobs of dead or stalled workers');
    if (r.orphans > 0) {
      log.info({ jobs: r.orphans, graceMs }, "owner's liveness lock vanished: its leases end after a grace period");
      // Reap them as soon as the grace is over, unless their worker renewed them meanwhile.
      clearTimeout(this.orphanTimer);
      this.orphanTimer = setTimeout(() => {
        this.reap().catch((err: Error) => log.warn({ err: err.message }, 'reaper failed'));
      }, graceMs + 50);
    }
  }

  start(): void {
    const { maintain, logger: log } = this.opts;
    this.jobs.push(
      new Every(this.opts.reapEveryMs ?? REAP_EVERY_MS, async () => {
        try {
          await this.reap();
          const expired = await maintain.expire();
          if (expired > 0) log.info({ expired }, 'cancelled queued jobs past their expireAt');
          const gone = await maintain.pruneWorkers();
          if (gone.length > 0) log.info({ workers: gone }, 'removed dead workers from the registry');
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'reaper failed');
        }
      }),
      new Every(60_000, async () => {
        try {
          await maintain.pruneQueueStarts();
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'pruning rate-limit records failed');
        }
      }),
    );
    this.jobs.push(historyRollup(maintain, log, this.opts.historyEveryMs));
    if (this.opts.retentionMs > 0) {
      const every = this.opts.cleanupEveryMs ?? 60_000;
      this.jobs.push(
        new Every(every, async () => {
          try {
            const deleted = await maintain.cleanup(this.opts.retentionMs);
            if (deleted > 0) log.info({ deleted, retentionMs: this.opts.retentionMs }, 'deleted finished jobs past retention');
            // Partitions ahead only with retention: without it nothing is ever dropped.
            if ((await maintain.prepareEventPartitions({ retentionMs: this.opts.retentionMs })) < 0) log.debug('event partitions busy; next pass retries');
          } catch (err) {
            log.warn({ err: (err as Error).message }, 'retention cleanup failed');
          }
        }, Math.random() * every),
      );
    }
  }

  async stop(): Promise<void> {
    clearTimeout(this.orphanTimer);
    await Promise.all(this.jobs.map((j) => j.stop()));
  }
}
