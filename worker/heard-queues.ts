// The queues herald_jobs notifications named since the last claim. A producer that committed
// alongside a notification's sender skipped its own NOTIFY; passing the queues' barriers before
// the claim waits for it, so the claim sees its jobs (queue/sql/wake.ts).
import type { Logger } from '../queue/log.ts';
import type { WorkService } from '../queue/services/work.ts';

export class HeardQueues {
  private readonly queues = new Set<string>();

  constructor(
    private readonly work: Pick<WorkService, 'passQueueBarriers'>,
    private readonly log: Logger,
  ) {}

  add(queue: string): void {
    this.queues.add(queue);
  }

  /** Before a claim: waits for the skippers of the queues heard of (none: no round trip). */
  async passBarriers(): Promise<void> {
    if (this.queues.size === 0) return;
    const queues = [...this.queues];
    this.queues.clear();
    try {
      if (!(await this.work.passQueueBarriers(queues))) this.log.debug({ queues }, 'gave up waiting at a wake-up barrier; the poll covers it');
    } catch (err) {
      for (const q of queues) this.queues.add(q); // the retried claim passes them
      throw err;
    }
  }
}
