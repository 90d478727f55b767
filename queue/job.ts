// The Job and JobEvent shapes of the HTTP API and the SSE stream, and their mapping from database
// rows. Both are derived from the tables in schema/ (see json.ts), so a column is declared once.
import type { JsonOf } from './json.ts';
import type { jobEvents, jobs } from './schema/index.ts';
import type { EventRow, JobRow } from './sql/rows.ts';
import type { WaitingFor } from './sql/waiting.ts';

export { ON_PARENT_FAILURE, type JobProgress, type OnParentFailure } from './schema/index.ts';
export { WAITING_REASONS, type WaitingFor } from './sql/waiting.ts';

/**
 * A job as the API shows it: the columns of herald.jobs in camelCase, except `runAt` (the
 * column available_at), `cancelRequested` (whether cancel_requested_at is set), the lock key,
 * has_children, waiting_on and a dead-letter copy's source queue, which stay inside; `trace` is the core's
 * only (the worker's span link), not in HTTP replies; plus `dependsOn` (its parents) and
 * `waitingFor`: why a queued job is held back, null when it is not queued or could start now.
 */
export type Job = Omit<JsonOf<typeof jobs.$inferSelect>, 'availableAt' | 'cancelRequestedAt' | 'ownerLock' | 'sourceQueue' | 'trace' | 'hasChildren' | 'waitingOn'> & {
  runAt: string;
  cancelRequested: boolean;
  trace?: string | null;
  waitingFor: WaitingFor | null;
  /** The job ids it waits for, in the order given (workflows; empty for a job without parents). */
  dependsOn: string[];
};

/** An event as the API shows it: a row of herald.job_events, `eventId` its id, `cursor` its feed position (tx, id) as an opaque string (cursor.ts). */
export type JobEvent = Omit<JsonOf<typeof jobEvents.$inferSelect>, 'id' | 'tx'> & {
  eventId: string;
  cursor: string;
};

/**
 * Orders by numeric id (int8 ids come as strings) without parsing them. Every batched write of a
 * worker (renewal, complete, fail) locks its rows in this order, so two of them can never deadlock.
 */
export const byId = (a: { id: string }, b: { id: string }): number =>
  a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

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
    // A job that ended well shows no error: an earlier attempt's stays in its timeline (job_events).
    lastError: r.status === 'succeeded' ? null : r.last_error,
    group: r.group ?? null,
    tags: r.tags ?? [],
    timeoutMs: r.timeout_ms ?? null,
    expireAt: iso(r.expire_at),
    deadLetterOf: r.dead_letter_of ?? null,
    trace: r.trace ?? null,
    // Statements that return jobs to the API compute it (sql/waiting.ts); a worker's rows
    // (claimed, so running) have none.
    waitingFor: r.waiting_for === 'scheduled' && r.status === 'queued' && r.wait ? r.wait.type : (r.waiting_for ?? null),
    flowId: r.flow_id ?? null,
    ref: r.ref ?? null,
    dependsOn: r.depends_on ?? [],
    onParentFailure: r.on_parent_failure ?? null,
    // What a durable run left in jobs.wait says something only while the job is queued.
    wait: r.status === 'queued' ? (r.wait ?? null) : null,
    invokedBy: r.invoked_by ?? null,
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
