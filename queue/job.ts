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
  /** Why a queued job is held back; null when it is not queued or could start now. */
  waitingFor: WaitingFor | null;
  /** The flow that made the job, and its ref there (null outside flows). */
  flowId: string | null;
  ref: string | null;
  /** The job ids it waits for, in the order given. */
  dependsOn: string[];
  /** What a parent's failure does to it ('cancel' | 'run'); null for a job without parents. */
  onParentFailure: OnParentFailure | null;
}

export const ON_PARENT_FAILURE = ['cancel', 'run'] as const;
export type OnParentFailure = (typeof ON_PARENT_FAILURE)[number];

export const WAITING_REASONS = ['dependencies', 'scheduled', 'paused', 'concurrency', 'group_concurrency', 'rate_limit', 'no_worker'] as const;
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
  /** The job's flow, or null. */
  flowId: string | null;
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
    // Statements that return jobs to the API compute it (sql/waiting.ts); a worker's rows
    // (claimed, so running) have none.
    waitingFor: r.waiting_for ?? null,
    flowId: r.flow_id ?? null,
    ref: r.ref ?? null,
    dependsOn: r.depends_on ?? [],
    onParentFailure: r.on_parent_failure ?? null,
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
    flowId: r.flow_id ?? null,
    cursor: `${r.tx}.${r.id}`,
  };
}
