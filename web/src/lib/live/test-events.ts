// Events and counts for the board's unit tests.
import type { BoardEvent, EventType, JobStatus, QueueCounts } from '../types';

let nextEventId = 1;
export function ev(jobId: string, type: EventType, status: JobStatus, extra: Partial<BoardEvent> = {}): BoardEvent {
  return {
    eventId: String(nextEventId++),
    jobId,
    queue: 'default',
    kind: 'sleep',
    type,
    status,
    attempt: type === 'enqueued' ? 0 : 1,
    worker: status === 'running' ? 'w1' : null,
    at: new Date(1_700_000_000_000).toISOString(),
    data: null,
    flowId: null,
    ...extra,
  };
}

export function counts(queue = 'default', c: Partial<QueueCounts> = {}): QueueCounts {
  return {
    queue, queued: 0, scheduled: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0,
    paused: false, concurrency: null, groupConcurrency: null, rateLimit: null, deadLetter: null, updatedBy: null, updatedAt: null, ...c,
  };
}
