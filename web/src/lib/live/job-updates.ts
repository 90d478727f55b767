// Applying events to job objects (the jobs table and the job detail share this).
import type { BoardEvent, BoardJob, EventType } from '../types';

const TERMINAL: EventType[] = ['succeeded', 'failed', 'cancelled'];

export function isTerminalEvent(type: EventType): boolean {
  return TERMINAL.includes(type);
}

/** Updates a job object in place from one of its events. */
export function applyEventToJob(job: BoardJob, ev: BoardEvent): void {
  const d = ev.data ?? {};
  job.status = ev.status;
  job.attempt = ev.attempt;
  const releaseLock = () => {
    job.lockedBy = null;
    job.leaseExpiresAt = null;
  };
  switch (ev.type) {
    case 'claimed':
      job.lockedBy = ev.worker;
      job.leaseExpiresAt = typeof d.leaseExpiresAt === 'string' ? d.leaseExpiresAt : job.leaseExpiresAt;
      job.startedAt = ev.at;
      job.progress = null;
      job.wait = null;
      job.waitingFor = null;
      break;
    case 'progress':
      job.progress = {
        percent: clampPercent(Number(d.percent ?? 0)),
        message: typeof d.message === 'string' ? d.message : null,
      };
      if (ev.worker) job.lockedBy = ev.worker;
      break;
    case 'succeeded':
      releaseLock();
      job.finishedAt = ev.at;
      // As the API gives it: a job that ended well shows no earlier attempt's error.
      job.lastError = null;
      break;
    case 'retry_scheduled':
      releaseLock();
      job.lastError = eventError(ev) ?? job.lastError;
      if (typeof d.runAt === 'string') job.runAt = d.runAt;
      break;
    case 'failed':
      releaseLock();
      job.lastError = eventError(ev) ?? job.lastError;
      job.finishedAt = ev.at;
      break;
    case 'cancel_requested':
      job.cancelRequested = true;
      break;
    case 'cancelled':
      releaseLock();
      job.finishedAt = ev.at;
      break;
    case 'lease_expired':
    case 'released':
      if (ev.status !== 'running') releaseLock();
      if (typeof d.runAt === 'string') job.runAt = d.runAt;
      if (ev.status !== 'queued' && ev.status !== 'running') job.finishedAt = ev.at;
      break;
    case 'sleeping':
    case 'waiting': {
      releaseLock();
      if (typeof d.until === 'string') job.runAt = d.until;
      // The wait as the Job JSON says it (its `wait` and `waitingFor`), so the page shows it live.
      const until = typeof d.until === 'string' ? { until: d.until } : {};
      job.wait =
        ev.type === 'sleeping'
          ? { type: 'sleep', ...until }
          : typeof d.childId === 'string' || typeof d.childId === 'number'
            ? { type: 'child', childId: String(d.childId) }
            : { type: 'signal', ...(typeof d.signal === 'string' ? { name: d.signal } : {}), ...until };
      job.waitingFor = job.wait.type;
      break;
    }
    case 'promoted':
      // Run now: due at once.
      job.runAt = ev.at;
      break;
    case 'retried':
      // As the retry statement does: due now, unfinished, with at least one attempt left.
      releaseLock();
      job.runAt = ev.at;
      job.finishedAt = null;
      job.cancelRequested = false;
      job.progress = null;
      job.result = null;
      if (typeof d.maxAttempts === 'number') job.maxAttempts = d.maxAttempts;
      break;
    default:
      break;
  }
}

/**
 * The error a retry_scheduled / failed event carries. The server's events hold the message as a
 * string (`data.error`); an object with a `message` is accepted too.
 */
export function eventError(ev: BoardEvent): { message: string } | null {
  const e = ev.data?.error;
  if (typeof e === 'string') return { message: e };
  if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return e as { message: string };
  return null;
}

export function clampPercent(p: number): number {
  if (!Number.isFinite(p)) return 0;
  return Math.min(100, Math.max(0, p));
}

/** A table row for a job the board only knows from the stream. */
export function jobFromEvent(ev: BoardEvent): BoardJob {
  const d = ev.data ?? {};
  const job: BoardJob = {
    id: ev.jobId,
    queue: ev.queue,
    kind: ev.kind,
    payload: undefined,
    priority: typeof d.priority === 'number' ? d.priority : null,
    status: ev.status,
    attempt: ev.attempt,
    maxAttempts: typeof d.maxAttempts === 'number' ? d.maxAttempts : null,
    requires: [],
    idempotencyKey: null,
    runAt: typeof d.runAt === 'string' ? d.runAt : ev.type === 'enqueued' ? ev.at : null,
    createdAt: ev.type === 'enqueued' ? ev.at : null,
    startedAt: null,
    finishedAt: null,
    lockedBy: null,
    leaseExpiresAt: null,
    cancelRequested: false,
    progress: null,
    result: null,
    lastError: null,
    group: null,
    tags: [],
    timeoutMs: null,
    expireAt: null,
    deadLetterOf: null,
    waitingFor: null,
    flowId: ev.flowId ?? null,
    ref: null,
    dependsOn: [],
    onParentFailure: null,
    wait: null,
    invokedBy: null,
    partial: true,
  };
  applyEventToJob(job, ev);
  return job;
}
