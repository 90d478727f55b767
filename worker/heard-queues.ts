// The queues herald_jobs notifications named since the last claim. A producer that committed
// alongside a notification's sender skipped its own NOTIFY; passing the queues' barriers before
// the claim waits for it, so the claim sees its jobs (queue/sql/wake.ts).
import type { Logger } from '../queue/log.ts';

export class HeardQueues {
  private readonly queues = new Set<string>();

  /** `retry`: asks for another claim round, to pass the barriers of queues given up on again. */
  constructor(
    private readonly log: Logger,
    private readonly retry: () => void,
  ) {}

  add(queue: string): void {
    this.queues.add(queue);
  }

  /** The queues whose barriers the next claim passes first; settle() says how that went. */
  take(): string[] {
    const queues = [...this.queues];
    this.queues.clear();
    return queues;
  }

  /**
   * The barriers of `queues` were passed, given up on (false) or not passed (an error: the next
   * claim passes them). Given up on, a producer still inside its COMMIT holds one: it skipped its
   * NOTIFY, so nothing else would bring its job before the poll. Another round waits again (each
   * wait is bounded, so a commit held for long costs a round per wait, not a busy loop).
   */
  settle(queues: string[], barrier: boolean | Error): void {
    if (barrier === true) return;
    for (const q of queues) this.queues.add(q);
    if (barrier === false) {
      this.log.debug({ queues }, 'gave up waiting at a wake-up barrier; waiting again');
      this.retry();
    }
  }
}
