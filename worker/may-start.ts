// A job claimed ahead has waited in the buffer since its claim. Before it starts, the database
// says whether its queue has been paused or limited since (the gate row) and whether its
// expireAt has passed (the database's clock, not this host's). Read from the database rather
// than the worker's cached settings: a PATCH that has returned is always seen, notified or not.
//
// One answer admits the jobs of every start for START_CHECK_REUSE_MS after the question was
// sent, not only those of the start that asked: in a drain, that is one round trip per window
// instead of one per slot refill (most of a drained job's round trips). It keeps the promise
// because a PATCH that holds a queue waits twice that long after its change committed before it
// returns (AdminService.patchQueue): an answer read before the commit was asked for before it, so
// every start it admits comes before the PATCH returns. Only admissions are reused: a job the
// answer would refuse is asked about afresh, so a resumed queue is not refused for a window.
import { performance } from 'node:perf_hooks';
import type { ClaimedJob } from '../queue/claimed.ts';
import type { WorkService } from '../queue/services/work.ts';
import { START_CHECK_REUSE_MS } from '../queue/defaults.ts';

type Startable = Pick<ClaimedJob, 'queue' | 'expireAtMs'>;

interface Answer {
  /** When the question was sent (monotonic clock, ms). */
  askedAt: number;
  held: Set<string>;
  /** The database's clock when it answered (epoch ms). */
  dbNow: number;
}

export class StartCheck {
  private last?: Answer;
  private forgotAt = -Infinity;

  constructor(
    private readonly work: Pick<WorkService, 'startGate'>,
    /** The monotonic clock (ms); a test steps its own. */
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** Whether each job may start now. */
  async mayStart(jobs: Startable[]): Promise<boolean[]> {
    const last = this.last;
    const age = last ? this.clock() - last.askedAt : Infinity;
    if (last && age < START_CHECK_REUSE_MS) {
      // The database's clock now, at the latest: its reading plus all the time since the question
      // was sent (which came before the reading). So a reused answer never admits a job whose
      // expireAt has passed; it may refuse one a round trip early, and a refusal is asked afresh.
      const reused = decide(last.held, last.dbNow + age, jobs);
      if (reused.every(Boolean)) return reused;
    }
    const askedAt = this.clock();
    const { held, now } = await this.work.startGate();
    const answer = { askedAt, held: new Set(held), dbNow: now.getTime() };
    if (askedAt > this.forgotAt && (!this.last || this.last.askedAt < askedAt)) this.last = answer;
    return decide(answer.held, answer.dbNow, jobs);
  }

  /** A settings change was announced: the next start asks again (an answer in flight is not kept). */
  forget(): void {
    this.last = undefined;
    this.forgotAt = this.clock();
  }
}

function decide(held: Set<string>, dbNow: number, jobs: Startable[]): boolean[] {
  return jobs.map((j) => !held.has(j.queue) && (j.expireAtMs === null || j.expireAtMs > dbNow));
}
