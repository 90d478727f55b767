// The live row reducer (job-updates.ts): a row built from a job's events alone must read as the
// row a reload gives, field by field, for every field the jobs table shows.
import { describe, expect, it } from 'vitest';
import type { BoardEvent, BoardJob, EventType, Job, JobStatus } from '../types';
import { applyEventToJob, jobFromEvent } from './job-updates';

const T0 = Date.parse('2026-12-01T08:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
let n = 0;
function e(type: EventType, status: JobStatus, attempt: number, s: number, data: Record<string, unknown> | null = null, worker: string | null = null): BoardEvent {
  return { eventId: String(++n), jobId: '42', queue: 'mail', kind: 'send', type, status, attempt, worker, at: at(s), data, flowId: null };
}

/** The fields the jobs table shows. */
const ROW = ['id', 'queue', 'kind', 'status', 'attempt', 'maxAttempts', 'priority', 'lockedBy', 'createdAt', 'runAt', 'finishedAt', 'progress', 'lastError'] as const;
const row = (j: BoardJob | Job) => Object.fromEntries(ROW.map((k) => [k, k === 'lastError' ? (j.lastError?.message ?? null) : j[k]]));

function replay(events: BoardEvent[]): BoardJob {
  const job = jobFromEvent(events[0]);
  for (const ev of events.slice(1)) applyEventToJob(job, ev);
  return job;
}

/** The job as GET /api/jobs/:id gives it after those events. */
function apiJob(p: Partial<Job>): Job {
  return {
    id: '42', queue: 'mail', kind: 'send', payload: {}, priority: 5, status: 'queued', attempt: 0, maxAttempts: 2, requires: [],
    idempotencyKey: null, runAt: at(0), createdAt: at(0), startedAt: null, finishedAt: null, lockedBy: null, leaseExpiresAt: null,
    cancelRequested: false, progress: null, result: null, lastError: null, group: null, tags: [], timeoutMs: null, expireAt: null,
    deadLetterOf: null, flowId: null, ref: null, dependsOn: [], onParentFailure: null, waitingFor: null, wait: null, invokedBy: null, ...p,
  };
}

describe('rows from events equal rows from a reload', () => {
  const enqueued = e('enqueued', 'queued', 0, 0, { priority: 5, runAt: at(0), maxAttempts: 2 });

  it('a job that arrives live shows its attempts limit', () => {
    expect(row(replay([enqueued]))).toEqual(row(apiJob({})));
  });

  it('fails twice, is retried by a bulk retry (limit raised to 3), runs and fails again', () => {
    const events = [
      enqueued,
      e('claimed', 'running', 1, 1, { leaseExpiresAt: at(31), lagMs: 1000 }, 'w1'),
      e('retry_scheduled', 'queued', 1, 2, { error: 'smtp 503', runAt: at(4) }, 'w1'),
      e('claimed', 'running', 2, 4, { leaseExpiresAt: at(34), lagMs: 0 }, 'w1'),
      e('failed', 'failed', 2, 5, { error: 'smtp 503 again' }, 'w1'),
      e('retried', 'queued', 2, 9, { maxAttempts: 3, by: { role: 'admin' } }),
      e('claimed', 'running', 3, 10, { leaseExpiresAt: at(40), lagMs: 0 }, 'w2'),
      e('failed', 'failed', 3, 11, { error: 'smtp 503 for good' }, 'w2'),
    ];
    const api = apiJob({ status: 'failed', attempt: 3, maxAttempts: 3, runAt: at(9), startedAt: at(10), finishedAt: at(11), lastError: { message: 'smtp 503 for good' } });
    expect(row(replay(events))).toEqual(row(api));
    // Between the retry and the next claim, too.
    const retried = apiJob({ status: 'queued', attempt: 2, maxAttempts: 3, runAt: at(9), startedAt: at(4), lastError: { message: 'smtp 503 again' } });
    expect(row(replay(events.slice(0, 6)))).toEqual(row(retried));
  });

  it('runs with progress and succeeds', () => {
    const events = [
      enqueued,
      e('claimed', 'running', 1, 1, { leaseExpiresAt: at(31), lagMs: 1000 }, 'w1'),
      e('progress', 'running', 1, 2, { percent: 50, message: 'half' }, 'w1'),
    ];
    const running = apiJob({ status: 'running', attempt: 1, lockedBy: 'w1', startedAt: at(1), leaseExpiresAt: at(31), progress: { percent: 50, message: 'half' } });
    expect(row(replay(events))).toEqual(row(running));
    const done = replay([...events, e('succeeded', 'succeeded', 1, 3, { durationMs: 2000 }, 'w1')]);
    expect(row(done)).toEqual(row(apiJob({ status: 'succeeded', attempt: 1, startedAt: at(1), finishedAt: at(3), progress: { percent: 50, message: 'half' } })));
  });

  // Mutation caught: the reducer leaving `wait` alone on sleeping / waiting (the page would show no countdown or form until a reload).
  it('sleeps, waits for a signal, then for a child: the wait the job page shows, as on a reload', () => {
    const claimed = e('claimed', 'running', 1, 1, { leaseExpiresAt: at(31), lagMs: 0 }, 'w1');
    const wait = (events: BoardEvent[]) => {
      const j = replay(events);
      return { status: j.status, wait: j.wait, waitingFor: j.waitingFor, runAt: j.runAt, lockedBy: j.lockedBy };
    };
    const base = { status: 'queued', lockedBy: null };
    expect(wait([enqueued, claimed, e('sleeping', 'queued', 0, 2, { until: at(60) }, 'w1')]))
      .toEqual({ ...base, wait: { type: 'sleep', until: at(60) }, waitingFor: 'sleep', runAt: at(60) });
    expect(wait([enqueued, claimed, e('waiting', 'queued', 0, 2, { signal: 'approve', until: null }, 'w1')]))
      .toEqual({ ...base, wait: { type: 'signal', name: 'approve' }, waitingFor: 'signal', runAt: at(0) });
    expect(wait([enqueued, claimed, e('waiting', 'queued', 0, 2, { childId: '77' }, 'w1')]))
      .toEqual({ ...base, wait: { type: 'child', childId: '77' }, waitingFor: 'child', runAt: at(0) });
    const resumed = wait([enqueued, claimed, e('waiting', 'queued', 0, 2, { signal: 'approve', until: at(90) }, 'w1'), e('claimed', 'running', 1, 3, { leaseExpiresAt: at(33), lagMs: 0 }, 'w1')]);
    expect(resumed).toMatchObject({ status: 'running', wait: null, waitingFor: null });
  });

  // Mutation caught: the reducer keeping lastError on `succeeded` (the `job.lastError = null;` line removed).
  it('fails once, then succeeds: no error shown, as on a reload', () => {
    const events = [
      enqueued,
      e('claimed', 'running', 1, 1, { leaseExpiresAt: at(31), lagMs: 0 }, 'w1'),
      e('retry_scheduled', 'queued', 1, 2, { error: 'smtp 503', runAt: at(4) }, 'w1'),
      e('claimed', 'running', 2, 4, { leaseExpiresAt: at(34), lagMs: 0 }, 'w1'),
      e('succeeded', 'succeeded', 2, 5, { durationMs: 1000 }, 'w1'),
    ];
    expect(row(replay(events))).toEqual(row(apiJob({ status: 'succeeded', attempt: 2, runAt: at(4), startedAt: at(4), finishedAt: at(5) })));
  });
});
