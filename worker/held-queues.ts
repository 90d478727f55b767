// The settings of the queues the plain claim leaves alone (paused, or with a limit), cached.
// Re-read when a settings change is announced (herald_control 'queues') and on every poll, so
// this worker knows which queues to claim one by one through the limited claim. The cache only
// decides WHERE to look: every limit is checked by the database at claim time, so a stale
// cache can delay a job, never break a limit.
import type { QueueSettings } from '../queue/services/settings.ts';
import type { WorkService } from '../queue/services/work.ts';
import type { Logger } from '../queue/log.ts';

export class HeldQueues {
  private settings: (QueueSettings & { queue: string; parked: boolean })[] = [];
  private loading?: Promise<void>;
  private again = false;

  constructor(
    private readonly work: Pick<WorkService, 'heldQueues'>,
    private readonly logger: Logger,
    /** The queues this worker takes; undefined = all. */
    private readonly mine?: Set<string>,
  ) {}

  /** Re-reads the settings; concurrent calls share one read (and one more after it). */
  refresh(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      do {
        this.again = false;
        try {
          this.settings = await this.work.heldQueues();
        } catch (err) {
          this.logger.warn({ err: (err as Error).message }, 'could not read queue settings');
        }
      } while (this.again);
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  /** Paused or limited: the plain claim skips it. */
  isHeld(queue: string): boolean {
    return this.settings.some((s) => s.queue === queue);
  }

  /**
   * Limited, unpaused queues this worker takes: each is claimed on its own. A worker for every
   * queue leaves dead-letter queues alone (as its plain claim does).
   */
  claimable(): string[] {
    return this.settings.filter((s) => !s.paused && (this.mine ? this.mine.has(s.queue) : !s.parked)).map((s) => s.queue);
  }
}
