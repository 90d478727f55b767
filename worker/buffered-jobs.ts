// Jobs claimed ahead of a free slot wait in the worker's buffer, leased. They go back to the
// queue (attempt refunded) when they should not start here after all:
// - their queue was paused or limited since the claim: on the settings change's notification,
//   after a listener reconnect (which misses notifications), and on a poll while any wait;
// - they waited past the buffer's TTL (this worker is slower than its pace promised);
// - the worker stops.
// The check just before a buffered job starts (may-start.ts) guards the start itself; this only
// gives the jobs back early, so another worker (or a resumed queue) can have them.
import type { Logger } from '../queue/log.ts';
import type { Lease } from '../queue/queue.ts';
import type { WorkService } from '../queue/services/work.ts';
import type { HeldQueues } from './held-queues.ts';
import type { Slots } from './slots.ts';

export interface BufferedJobsOptions {
  work: WorkService;
  worker: string;
  held: HeldQueues;
  slots: Slots;
  logger: Logger;
  /** A buffered job not started after this long goes back. */
  ttlMs: number;
  /** While jobs wait, the settings are re-read at least this often. */
  pollMs: number;
}

export class BufferedJobs {
  /** When the settings were last read (Date.now()). */
  private heldReadAt = 0;
  private ttlTimer?: NodeJS.Timeout;
  private heldTimer?: NodeJS.Timeout;

  constructor(private readonly opts: BufferedJobsOptions) {}

  start(): void {
    const { ttlMs, pollMs } = this.opts;
    this.ttlTimer = setInterval(() => void this.returnAll(ttlMs, 'buffered past its TTL'), Math.max(10, ttlMs / 2));
    // Without notifications (polling only, or one missed), the settings are re-read every poll
    // interval while jobs wait in the buffer, so those of a queue paused since go back at once.
    this.heldTimer = setInterval(() => {
      if (this.opts.slots.buffered > 0 && this.settingsAgeMs() >= pollMs) void this.refreshHeld();
    }, pollMs);
  }

  stop(): void {
    clearInterval(this.ttlTimer);
    clearInterval(this.heldTimer);
  }

  /** How long ago the settings were last read. */
  settingsAgeMs(): number {
    return Date.now() - this.heldReadAt;
  }

  /** Re-reads the held queues; buffered jobs of those go back (the plain claim took them, unheld then). */
  async refreshHeld(): Promise<void> {
    this.heldReadAt = Date.now();
    const { held, slots } = this.opts;
    await held.refresh();
    if (slots.buffered > 0) await this.handBack(slots.takeBuffered(0, (job) => held.isHeld(job.queue)), 'queue settings changed');
  }

  /** Hands buffered jobs (all, or those older than `olderThanMs`) back to the queue. */
  returnAll(olderThanMs: number, why: string): Promise<void> {
    return this.handBack(this.opts.slots.takeBuffered(olderThanMs), why);
  }

  /** Hands jobs that never started back to the queue, attempt refunded. */
  async handBack(leases: Lease[], why: string): Promise<void> {
    if (leases.length === 0) return;
    const { work, worker, logger } = this.opts;
    try {
      const lost = await work.release(worker, leases);
      logger.info({ returned: leases.length - lost.length, lost: lost.length, why }, 'returned buffered jobs to the queue');
    } catch (err) {
      // No longer renewed: the reaper requeues them when their lease runs out.
      logger.warn({ err: (err as Error).message, jobs: leases.length }, 'could not return buffered jobs; the reaper will requeue them');
    }
  }
}
