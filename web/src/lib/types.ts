// Shapes of the HTTP/SSE API (see shared CONTRACT.md). Kept loose where the server may add fields.

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** The buckets `GET /api/queues` counts: a queued job whose runAt is still ahead counts as `scheduled`. */
export type CountBucket = 'queued' | 'scheduled' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const JOB_STATUSES: JobStatus[] = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
export const COUNT_BUCKETS: CountBucket[] = ['queued', 'scheduled', 'running', 'succeeded', 'failed', 'cancelled'];

export type EventType =
  | 'enqueued'
  | 'claimed'
  | 'progress'
  | 'succeeded'
  | 'retry_scheduled'
  | 'failed'
  | 'cancel_requested'
  | 'cancelled'
  | 'lease_expired'
  | 'released'
  | 'retried';

export interface JobError {
  message: string;
  stack?: string;
  [key: string]: unknown;
}

export interface Progress {
  percent: number;
  message: string | null;
}

export interface Job {
  id: string;
  queue: string;
  kind: string;
  payload: unknown;
  priority: number | null;
  status: JobStatus;
  attempt: number;
  maxAttempts: number | null;
  requires: string[];
  idempotencyKey: string | null;
  runAt: string | null;
  createdAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  lockedBy: string | null;
  leaseExpiresAt: string | null;
  cancelRequested: boolean;
  progress: Progress | null;
  result: unknown;
  lastError: JobError | null;
  /** Board-only: the row was built from a stream event, so payload/result are not loaded. */
  partial?: boolean;
}

/** One `event: job` message of `/api/events` (and one entry of `/api/jobs/:id/events`). */
export interface JobEvent {
  eventId: string;
  jobId: string;
  queue: string;
  kind: string;
  type: EventType;
  status: JobStatus;
  attempt: number;
  worker: string | null;
  at: string;
  data: Record<string, unknown> | null;
}

export interface QueueCounts {
  queue: string;
  queued: number;
  scheduled: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

export interface JobFilter {
  queue?: string;
  status?: string;
  kind?: string;
  /** Search filters (see lib/search.ts): the server judges these; stream events cannot. */
  group?: string;
  tag?: string;
  payload?: string;
  error?: string;
  createdAfter?: string;
  createdBefore?: string;
}

export interface WorkerInfo {
  worker: string;
  running: number;
  since: string | null;
  jobs: string[];
}

export interface TableHealth {
  name: string;
  liveTuples: number | null;
  deadTuples: number | null;
  lastAutovacuum: string | null;
  lastVacuum: string | null;
}

export interface Health {
  ok: boolean;
  db: 'up' | 'down';
  listener: 'up' | 'down' | 'polling';
  streamLagMs?: number | null;
  tables?: TableHealth[];
}

export type StreamState = 'connecting' | 'live' | 'reconnecting';
