// The board's view of the HTTP/SSE API. The shapes are declared once, by the server's core and
// the typed client (the package's `herald/client` export); the board imports them as types only,
// so no server code reaches the bundle. What is declared here is the board's own: a job row that
// may be known only from stream events, and the filters and states of its views.
import type { ApiJobEvent, Job, JobStatus, QueueCounts, QueueSettingsPatch } from 'herald/client';

export type { Alert, BulkAction, EnqueueInput, EventType, Health, HistoryBucket, HistoryRange, Job, JobStatus, QueueCounts, QueueSettingsPatch, Schedule, WorkerInfo } from 'herald/client';
export type { FlowInfo, FlowStatus, Relative, Step } from 'herald/client';

/** The buckets `GET /api/queues` counts: a queued job whose runAt is still ahead counts as `scheduled`. */
export type CountBucket = Exclude<keyof QueueCounts, 'queue' | keyof QueueSettingsPatch | 'updatedBy' | 'updatedAt'>;

// Records keyed by the unions, so a status or bucket added to the API fails the build here.
export const JOB_STATUSES = Object.keys({
  queued: 1,
  running: 1,
  succeeded: 1,
  failed: 1,
  cancelled: 1,
  blocked: 1,
} satisfies Record<JobStatus, 1>) as JobStatus[];
export const COUNT_BUCKETS = Object.keys({
  queued: 1,
  scheduled: 1,
  running: 1,
  succeeded: 1,
  failed: 1,
  cancelled: 1,
  blocked: 1,
} satisfies Record<CountBucket, 1>) as CountBucket[];

/**
 * A job as the board holds it: the API's Job, except that a row built from stream events alone
 * (`partial`) does not know its priority, attempts limit or creation time yet, nor its payload.
 */
export type BoardJob = Omit<Job, 'priority' | 'maxAttempts' | 'runAt' | 'createdAt'> & {
  priority: number | null;
  maxAttempts: number | null;
  runAt: string | null;
  createdAt: string | null;
  partial?: boolean;
};

/** A job event as the board holds it: `data` checked to be an object (or null) on arrival. */
export type BoardEvent = Omit<ApiJobEvent, 'data'> & { data: Record<string, unknown> | null };

export interface JobFilter {
  queue?: string;
  status?: string;
  kind?: string;
  /** A flow's id: stream events carry it, so the table follows a flow's jobs live. */
  flow?: string;
  /** sleep, signal or child: queued jobs whose durable handler waits so (their `sleeping` / `waiting` events say it too). */
  waitingFor?: string;
  /** Search filters (see lib/search.ts): the server judges these; stream events cannot. */
  group?: string;
  tag?: string;
  payload?: string;
  error?: string;
  createdAfter?: string;
  createdBefore?: string;
}

export type StreamState = 'connecting' | 'live' | 'reconnecting';
