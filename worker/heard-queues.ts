// The queues herald_jobs notifications named since the last claim. A producer that committed
// alongside a notification's sender skipped its own NOTIFY; passing the queues' barriers before
// the claim waits for it, so the claim sees its jobs (queue/sql/wake.ts).
import type { Logger } from '../queue/log.ts';

export class HeardQueues {
  private readonly queues = new Set<string>();

  constructor(private readonly log: Logger) {}

  add(queue: string): void {
    this.queues.add(queue);
  }

  /** The queues whose barriers the next claim passes first; settle() says how that went. */
  take(): string[] {
    const queues = [...this.queues];
    this.queues.clear();
    return queues;
  }

  /** The barriers of `queues` were passed, given up on (false) or not passed (an error: the next claim passes them). */
  settle(queues: string[], barrier: boolean | Error): void {
    if (barrier instanceof Error) for (const q of queues) this.queues.add(q);
    else if (!barrier) this.log.debug({ queues }, 'gave up waiting at a wake-up barrier; the poll covers it');
  }
}
