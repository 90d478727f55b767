// Unit tests for the jobs table's first page (jobs-page.ts, job-updates.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import type { BoardJob, JobStatus } from '../types';
import { matchesFilter, mergeIntoPage } from './jobs-page';
import { ev } from './test-events';

describe('mergeIntoPage (jobs table)', () => {
  function job(id: string, status: JobStatus = 'queued', queue = 'default'): BoardJob {
    return {
      id, queue, kind: 'sleep', payload: {}, priority: 0, status, attempt: 0, maxAttempts: 5, requires: [],
      idempotencyKey: null, runAt: null, createdAt: null, startedAt: null, finishedAt: null, lockedBy: null,
      leaseExpiresAt: null, cancelRequested: false, progress: null, result: null, lastError: null,
      group: null, tags: [], timeoutMs: null, expireAt: null, deadLetterOf: null, flowId: null, ref: null, dependsOn: [], onParentFailure: null, waitingFor: null, wait: null, invokedBy: null,
    };
  }

  // Mutation caught: matchesFilter ignoring waitingFor (every new job would join a "waiting for a signal" list).
  it('a waitingFor filter takes the jobs whose handler starts that wait, and keeps the rows it read', () => {
    const f = { filter: { waitingFor: 'signal' }, limit: 50, firstPage: true, next: null };
    const waiting = { ...job('5'), waitingFor: 'signal' as const };
    const r = mergeIntoPage([waiting], [
      ev('9', 'enqueued', 'queued'),
      ev('8', 'sleeping', 'queued', { data: { until: '2026-01-01T00:00:30Z' } }),
      ev('7', 'waiting', 'queued', { data: { childId: '99' } }),
      ev('6', 'waiting', 'queued', { data: { signal: 'approve', until: null } }),
    ], f);
    expect(r.rows.map((j) => [j.id, j.waitingFor])).toEqual([['6', 'signal'], ['5', 'signal']]);
    expect(matchesFilter(waiting, f.filter)).toBe(true);
    expect(matchesFilter({ ...waiting, waitingFor: null }, f.filter)).toBe(false);
    expect(matchesFilter(ev('8', 'sleeping', 'queued'), { waitingFor: 'sleep' })).toBe(true);
  });

  it('updates rows in place: status, attempt, progress, lock', () => {
    const rows = [job('3'), job('2')];
    const r = mergeIntoPage(
      rows,
      [
        ev('2', 'claimed', 'running', { worker: 'w9', data: { leaseExpiresAt: '2026-01-01T00:00:30Z', lagMs: 2 } }),
        ev('2', 'progress', 'running', { worker: 'w9', data: { percent: 40, message: 'working' } }),
      ],
      { filter: {}, limit: 50, firstPage: true, next: null },
    );
    expect(r.rows[1]).toMatchObject({ status: 'running', attempt: 1, lockedBy: 'w9', progress: { percent: 40, message: 'working' } });
  });

  it("takes a failure's message from the event (the server sends data.error as a string)", () => {
    const rows = [job('2', 'running')];
    mergeIntoPage(rows, [ev('2', 'retry_scheduled', 'queued', { data: { error: 'boom', runAt: '2026-01-01T00:00:30Z' } })], {
      filter: {}, limit: 50, firstPage: true, next: null,
    });
    expect(rows[0].lastError).toEqual({ message: 'boom' });
    mergeIntoPage(rows, [ev('2', 'failed', 'failed', { data: { error: { message: 'bang' } } })], {
      filter: {}, limit: 50, firstPage: true, next: null,
    });
    expect(rows[0].lastError).toEqual({ message: 'bang' });
  });

  it('puts new matching jobs on top of the first page and keeps it bounded', () => {
    const rows = [job('3'), job('2'), job('1')];
    const batch = [ev('4', 'enqueued', 'queued'), ev('5', 'enqueued', 'queued', { queue: 'other' }), ev('6', 'enqueued', 'queued')];
    const r = mergeIntoPage(rows, batch, { filter: { queue: 'default' }, limit: 3, firstPage: true, next: null });
    expect(r.rows.map((j) => j.id)).toEqual(['6', '4', '3']);
    expect(r.next).toBe('3'); // paging continues after the last kept row
    expect(r.rows[0].partial).toBe(true);
  });

  it("follows a flow filter: only jobs of that flow are added", () => {
    const r = mergeIntoPage(
      [],
      [ev('5', 'enqueued', 'queued', { flowId: '7' }), ev('6', 'enqueued', 'queued', { flowId: '8' }), ev('9', 'enqueued', 'queued')],
      { filter: { flow: '7' }, limit: 50, firstPage: true, next: null },
    );
    expect(r.rows.map((j) => j.id)).toEqual(['5']);
  });

  it('adds nothing on later pages, and ignores older jobs that belong to a later page', () => {
    const rows = [job('30'), job('20')];
    expect(mergeIntoPage(rows, [ev('40', 'enqueued', 'queued')], { filter: {}, limit: 2, firstPage: false, next: '20' }).changed).toBe(false);
    const r = mergeIntoPage(rows, [ev('10', 'failed', 'failed')], { filter: { status: 'failed' }, limit: 2, firstPage: true, next: '20' });
    expect(r.changed).toBe(false);
    const r2 = mergeIntoPage(rows, [ev('25', 'failed', 'failed')], { filter: { status: 'failed' }, limit: 5, firstPage: true, next: null });
    expect(r2.rows.map((j) => j.id)).toEqual(['30', '25', '20']);
  });
});
