// One claim round of a worker: the plain claim (every queue without settings) and one limited
// claim per limited queue, up to `limit` jobs in all. Who goes first rotates from round to round,
// so a busy plain queue cannot starve the limited ones nor the other way round. Queues without
// settings cost nothing extra when there are no limited queues.
import type { ClaimedJob } from '../queue/claimed.ts';
import type { WorkService } from '../queue/services/work.ts';
import type { HeardQueues } from './heard-queues.ts';
import type { HeldQueues } from './held-queues.ts';
import type { Slots } from './slots.ts';

export interface ClaimRoundOptions {
  work: WorkService;
  held: HeldQueues;
  /** Queues notified since the last round: their barriers are passed before its first read. */
  heard: HeardQueues;
  slots: Slots;
  worker: string;
  leaseMs: number;
  /** The queues this worker serves (undefined: all), and what it can run. */
  queues?: string[];
  capabilities: string[];
  kinds: string[];
  /** The liveness lock's key, so that the reaper knows whose jobs are alive (null while cut off). */
  ownerLock: () => number | null;
  /** A claim recorded a key the listener no longer holds: its jobs must be renewed under the current one. */
  ownerChanged: () => void;
  /** The local deadline of the leases a claim sent at `sentAt` (performance.now()) took. */
  deadline: (sentAt: number) => number;
  /** A limited queue's next start is due at this time (ms since the epoch). */
  dueAt: (at: number) => void;
}

export class ClaimRound {
  private turn = 0;

  constructor(private readonly o: ClaimRoundOptions) {}

  async run(limit: number): Promise<number> {
    const { o } = this;
    const limited = o.held.claimable();
    const base = { worker: o.worker, capabilities: o.capabilities, kinds: o.kinds, leaseMs: o.leaseMs, ownerLock: o.ownerLock() };
    // A worker whose queues are all held has nothing to ask the plain claim for.
    const plain = !o.queues || o.queues.some((q) => !o.held.isHeld(q));
    const order = plain ? [null, ...limited] : limited;
    if (order.length === 0) return 0;
    this.turn = (this.turn + 1) % order.length;
    // Queues notified since the last round: their barriers are passed before the first read
    // (with the plain claim, in its round trip), and kept for the next round if not.
    let heard = o.heard.take();
    let got = 0;
    try {
      for (let i = 0; i < order.length && got < limit; i++) {
        const q = order[(this.turn + i) % order.length];
        let jobs: ClaimedJob[];
        let barrier: boolean | Error = true;
        const sentAt = performance.now();
        if (q === null) {
          ({ jobs, barrier } = await o.work.claimAfterBarriers(heard, { ...base, queues: o.queues, limit: limit - got }));
        } else {
          // No claim-ahead for a limited queue: a buffered job would hold one of its few slots idle.
          const room = Math.min(limit - got, o.slots.idle);
          if (room <= 0) continue;
          if (heard.length > 0) barrier = await o.work.passQueueBarriers(heard);
          const r = await o.work.claimLimitedToRun(q, { ...base, limit: room });
          jobs = r.jobs;
          if (r.retryAt) o.dueAt(r.retryAt.getTime());
        }
        if (heard.length > 0) o.heard.settle(heard, barrier);
        heard = [];
        const deadline = o.deadline(sentAt);
        for (const job of jobs) o.slots.start(job, deadline);
        got += jobs.length;
        // A barrier that failed under a claim that ran: its jobs start, and the claim is retried.
        if (barrier instanceof Error) throw barrier;
      }
    } finally {
      for (const q of heard) o.heard.add(q);
      if (got > 0 && o.ownerLock() !== base.ownerLock) o.ownerChanged();
    }
    return got;
  }
}
