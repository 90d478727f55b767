// Housekeeping every worker runs: the reaper (about every second, so a SIGKILLed worker's jobs
// come back within ~2 s through its vanished liveness lock), with it the expiry pass (queued
// jobs past their expireAt end cancelled) and the removal of dead workers' registry rows; and
// retention cleanup and the pruning of old rate-window records (about every minute). The core's advisory try-lock lets only one reaper work at a time, so a fleet of
// workers costs one cheap "lock busy" statement each. Jitter keeps them out of step.
import type { Queue } from '../queue/queue.ts';
import type { Logger } from '../queue/log.ts';

export interface MaintenanceOptions {
  queue: Queue;
  logger: Logger;
  reapEveryMs?: number;
  cleanupEveryMs?: number;
  /** Finished jobs older than this are deleted; 0 keeps them for ever. */
  retentionMs: number;
}

const jitter = (ms: number) => ms * (0.75 + 0.5 * Math.random());

/** Runs `fn` every ~`everyMs` (jittered), never overlapping itself. */
class Every {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;

  constructor(private readonly everyMs: number, private readonly fn: () => Promise<void>, firstInMs = jitter(everyMs)) {
    this.timer = setTimeout(() => this.tick(), firstInMs);
  }

  private tick(): void {
    this.running = this.fn().finally(() => {
      this.running = undefined;
      if (!this.stopped) this.timer = setTimeout(() => this.tick(), jitter(this.everyMs));
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}

export class Maintenance {
  private readonly jobs: Every[] = [];

  constructor(private readonly opts: MaintenanceOptions) {}

  start(): void {
    const { queue, logger: log } = this.opts;
    this.jobs.push(
      new Every(this.opts.reapEveryMs ?? 1_000, async () => {
        try {
          const r = await queue.reap();
          if (r.requeued + r.failed + r.cancelled > 0) log.info(r, 'reaped jobs of dead or stalled workers');
          const expired = await queue.expire();
          if (expired > 0) log.info({ expired }, 'cancelled queued jobs past their expireAt');
          const gone = await queue.pruneWorkers();
          if (gone.length > 0) log.info({ workers: gone }, 'removed dead workers from the registry');
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'reaper failed');
        }
      }),
      new Every(60_000, async () => {
        try {
          await queue.pruneQueueStarts();
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'pruning rate-limit records failed');
        }
      }),
    );
    if (this.opts.retentionMs > 0) {
      const every = this.opts.cleanupEveryMs ?? 60_000;
      this.jobs.push(
        new Every(every, async () => {
          try {
            const deleted = await queue.cleanup(this.opts.retentionMs);
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
