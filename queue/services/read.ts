// Reading: one job, pages of jobs (list and search), queue counts, a job's events, queue
// history, the workers and the tables' vacuum figures.
import { DEFAULTS } from '../defaults.ts';
import { NotFoundError } from '../errors.ts';
import { HISTORY_RANGES, rangeStart, toBuckets, type HistoryBucket, type HistoryRange } from '../history.ts';
import { toEvent, toJob, type Job, type JobEvent } from '../job.ts';
import { filterValues, isSearch, type JobFilter } from '../search.ts';
import { jobEvents } from '../sql/feed.ts';
import { readHistory } from '../sql/history.ts';
import { getJob, queueCounts, tableStats } from '../sql/reads.ts';
import { queueHeads } from '../sql/queue-heads.ts';
import { listJobs, windowFloor } from '../sql/search.ts';
import { listWorkers } from '../sql/workers.ts';
import { rethrowPg, type Db } from './db.ts';
import type { WorkerInfo } from './registry.ts';
import { toSettings, type QueueInfo } from './settings.ts';

/** A queue with a ready job, as the alerts read it (sql/queue-heads.ts). */
export interface QueueHead {
  queue: string;
  /** Seconds the oldest ready job a live worker runs has waited; null when none found. */
  oldestReadyS: number | null;
  /** Live workers that take the queue. */
  liveWorkers: number;
  /** The oldest ready job, when no live worker runs it: how long it has waited, and its kind. */
  noWorker: { seconds: number; kind: string } | null;
}

export interface ListOptions {
  before?: string;
  limit?: number;
  /**
   * Jobs a search looks at per page (DEFAULTS.searchWindow). A page that ends at the window says
   * so, and its `next` continues below it, so every job stays reachable at a bounded cost.
   */
  window?: number;
}

export interface JobPage {
  jobs: Job[];
  /** Pass back as `before` for the next page; null on the last one. */
  next: string | null;
  /**
   * Present when the page was cut short by the search window: that many jobs were looked at,
   * and `next` continues below them.
   */
  searched?: number;
}

export interface EventPage {
  events: JobEvent[];
  /** Pass back as `after` for the next page; null on the last one. */
  next: string | null;
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

export class ReadService {
  constructor(private readonly db: Db) {}

  async get(id: string): Promise<Job | null> {
    const { rows } = await this.db.run(getJob, [id]);
    return rows[0] ? toJob(rows[0]) : null;
  }

  /** The job, or a NotFoundError. */
  async mustGet(id: string): Promise<Job> {
    const job = await this.get(id);
    if (!job) throw new NotFoundError(`job ${id} does not exist`);
    return job;
  }

  /**
   * A page of jobs, newest first. A search (payload, error or time range: no index serves
   * them) looks at the newest `window` jobs below the cursor only; when that cuts the page
   * short, `searched` says so and `next` continues below the window.
   */
  async list(q: JobFilter & ListOptions = {}): Promise<JobPage> {
    const { before = null, limit = DEFAULTS.listLimit, window = DEFAULTS.searchWindow, ...f } = q;
    const values = filterValues(f);
    let floor: string | null = null;
    if (isSearch(f)) floor = (await this.db.run(windowFloor, [before, window])).rows[0]?.id ?? null;
    // A payload filter the database cannot take (a \u0000 in a string) is the caller's 400.
    const { rows } = await this.db.run(listJobs, [...values, before, limit + 1, floor]).catch(rethrowPg);
    const jobs = rows.slice(0, limit).map(toJob);
    if (rows.length > limit) return { jobs, next: jobs[jobs.length - 1].id };
    // The window ended before the page filled: older jobs remain, below the window.
    if (floor !== null) return { jobs, next: floor, searched: window };
    return { jobs, next: null };
  }

  /** Every queue with jobs or settings (or just `queue`), with counts and settings. */
  async counts(queue?: string): Promise<QueueInfo[]> {
    const { rows } = await this.db.run(queueCounts, [queue ?? null]);
    return rows.map((r) => ({
      queued: r.queued, scheduled: r.scheduled, running: r.running,
      succeeded: r.succeeded, failed: r.failed, cancelled: r.cancelled, blocked: r.blocked,
      ...toSettings(r),
      updatedBy: r.updated_by,
      updatedAt: r.updated_at?.toISOString() ?? null,
    }));
  }

  /** A page of a job's events, oldest first, after event id `after`; `next` continues it (null: none left). */
  async eventPage(jobId: string, opts: { after?: string; limit?: number } = {}): Promise<EventPage> {
    const limit = opts.limit ?? DEFAULTS.eventsLimit;
    const { rows } = await this.db.run(jobEvents, [jobId, opts.after ?? null, limit + 1]);
    const events = rows.slice(0, limit).map(toEvent);
    return { events, next: rows.length > limit ? events[events.length - 1].eventId : null };
  }

  /** All of a job's events, oldest first (page by page). */
  async events(jobId: string): Promise<JobEvent[]> {
    const all: JobEvent[] = [];
    for (let after: string | null | undefined; after !== null; ) {
      const page = await this.eventPage(jobId, { after });
      all.push(...page.events);
      after = page.next;
    }
    return all;
  }

  /** A queue's history over the range, in its buckets, oldest first. */
  async history(queue: string, range: HistoryRange, now = Date.now()): Promise<HistoryBucket[]> {
    const { rows } = await this.db.run(readHistory, [queue, rangeStart(range, now), `${HISTORY_RANGES[range].bucketMs / 1000} seconds`]);
    return toBuckets(rows, range, now);
  }

  /** Each queue with a ready job (not paused, not a dead-letter queue): its oldest ready job's age and its live workers. */
  async queueHeads(): Promise<QueueHead[]> {
    return (await this.db.run(queueHeads, [])).rows.map((r) => ({
      queue: r.queue, oldestReadyS: r.oldest_ready_s, liveWorkers: r.live_workers,
      noWorker: r.no_worker_s === null ? null : { seconds: r.no_worker_s, kind: r.no_worker_kind! },
    }));
  }

  /** Live registered workers (idle ones too) and any unregistered holder of running jobs. */
  async workers(): Promise<WorkerInfo[]> {
    const { rows } = await this.db.run(listWorkers, []);
    return rows.map((r) => ({
      worker: r.worker, host: r.host, pid: r.pid, queues: r.queues, kinds: r.kinds, capabilities: r.capabilities,
      concurrency: r.concurrency, running: r.running, startedAt: iso(r.started_at), lastSeenAt: iso(r.last_seen_at),
      since: iso(r.since), jobs: r.jobs,
    }));
  }

  async tableStats(): Promise<{ name: string; liveTuples: number; deadTuples: number; lastAutovacuum: string | null; lastVacuum: string | null }[]> {
    const { rows } = await this.db.run(tableStats, []);
    return rows.map((r) => ({
      name: r.name,
      liveTuples: r.live_tuples,
      deadTuples: r.dead_tuples,
      lastAutovacuum: iso(r.last_autovacuum),
      lastVacuum: iso(r.last_vacuum),
    }));
  }
}
