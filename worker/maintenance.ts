// Housekeeping every worker runs: the reaper (about every second, so a SIGKILLed worker's jobs
// come back within ~2 s through its vanished liveness lock), with it the expiry pass (queued
// jobs past their expireAt end cancelled) and the removal of dead workers' registry rows; and
// retention cleanup and the pruning of old rate-window records (about every minute), and the
// queue-history rollup (about every 10 s). The core's advisory try-lock lets only one reaper work at a time, so a fleet of
// workers costs one cheap "lock busy" statement each. Jitter keeps them out of step.
import type { MaintainService } from '../queue/services/maintain.ts';
import type { Logger } from '../queue/log.ts';
import { Every } from '../queue/every.ts';
import { historyRollup } from '../queue/history-rollup.ts';

export interface MaintenanceOptions {
  maintain: MaintainService;
  logger: Logger;
  reapEveryMs?: number;
  cleanupEveryMs?: number;
  historyEveryMs?: number;
  /** Finished jobs older than this are deleted; 0 keeps them for ever. */
  retentionMs: number;
}

export class Maintenance {
  private readonly jobs: Every[] = [];

  constructor(private readonly opts: MaintenanceOptions) {}

  start(): void {
    const { maintain, logger: log } = this.opts;
    this.jobs.push(
      new Every(this.opts.reapEveryMs ?? 1_000, async () => {
        try {
          const r = await maintain.reap();
          if (r.requeued + r.failed + r.cancelled > 0) log.info(r, 'reaped jobs of dead or stalled workers');
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
          } catch (err) {
            log.warn({ err: (err as Error).message }, 'retention cleanup failed');
          }
        }, Math.random() * every),
      );
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.jobs.map((j) => j.stop()));
  }
}
