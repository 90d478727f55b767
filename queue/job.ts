// The Job and JobEvent shapes of the HTTP API and the SSE stream, and their mapping from database rows.
import type { EventType, JobStatus } from './schema.ts';
import type { EventRow, JobRow } from './sql/rows.ts';

export interface JobProgress {
  percent: number;
  message: string | null;
}

export interface Job {
  id: string;
  queue: string;
  kind: string;
  payload: unknown;
  priority: number;
  status: JobStatus;
  attempt: number;
  maxAttempts: number;
  requires: string[];
  idempotencyKey: string | null;
  runAt: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  lockedBy: string | null;
  leaseExpiresAt: string | null;
  cancelRequested: boolean;
  progress: JobProgress | null;
  result: unknown;
  lastError: { message: string; [k: string]: unknown } | null;
  group: string | null;
  tags: string[];
  timeoutMs: number | null;
  expireAt: string | null;
  /** On a dead-letter copy: the job whose terminal failure made it (always set in replies; null on other jobs). */
  deadLetterOf?: string | null;
  /** The traceparent of the span that enqueued the job, for the worker's span link; not in HTTP replies. */
  trace?: string | null;
  /** Why a queued job is held back; null when it is not queued or could start now. */
  waitingFor: WaitingFor | null;
}

export const WAITING_REASONS = ['scheduled', 'paused', 'concurrency', 'group_concurrency', 'rate_limit', 'no_worker'] as const;
export type WaitingFor = (typeof WAITING_REASONS)[number];

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
  data: unknown;
  /** The feed position (tx, id) as an opaque string; see cursor.ts. */
  cursor: string;
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export function toJob(r: JobRow): Job {
  return {
    id: r.id,
    queue: r.queue,
    kind: r.kind,
    payload: r.payload,
    priority: r.priority,
    status: r.status,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    requires: r.requires,
    idempotencyKey: r.idempotency_key,
    runAt: r.available_at.toISOString(),
    createdAt: r.created_at.toISOString(),
    startedAt: iso(r.started_at),
    finishedAt: iso(r.finished_at),
    lockedBy: r.locked_by,
    leaseExpiresAt: iso(r.lease_expires_at),
    cancelRequested: r.cancel_requested_at !== null,
    progress: r.progress,
    result: r.result ?? null,
    lastError: r.last_error,
    group: r.group ?? null,
    tags: r.tags ?? [],
    timeoutMs: r.timeout_ms ?? null,
    expireAt: iso(r.expire_at),
    deadLetterOf: r.dead_letter_of ?? null,
    trace: r.trace ?? null,
    // Statements that return jobs to the API compute it (sql/waiting.ts); a worker's rows
    // (claimed, so running) have none.
    waitingFor: r.waiting_for ?? null,
  };
}

export function toEvent(r: EventRow): JobEvent {
  return {
    eventId: r.id,
    jobId: r.job_id,
    queue: r.queue,
    kind: r.kind,
    type: r.type,
    status: r.status,
    attempt: r.attempt,
    worker: r.worker,
    at: r.at.toISOString(),
    data: r.data,
    cursor: `${r.tx}.${r.id}`,
  };
}
