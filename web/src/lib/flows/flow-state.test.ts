// Unit tests for a flow's live state on the board (flow-state.ts).
import { describe, expect, it } from 'vitest';
import { ev } from '../live/test-events';
import type { JobStatus } from '../types';
import { applyFlowEvents, countStatuses, flowStatusOf, parentsWaitingText } from './flow-state';

describe('applyFlowEvents', () => {
  it("moves the statuses of the flow's jobs, ignores other flows, and flags a job it does not know", () => {
    const statuses = new Map<string, JobStatus>([['1', 'running'], ['2', 'blocked']]);
    const seen = new Set<string>();
    const r = applyFlowEvents(statuses, '7', [
      ev('1', 'succeeded', 'succeeded', { flowId: '7' }),
      ev('2', 'unblocked', 'queued', { flowId: '7' }),
      ev('3', 'succeeded', 'succeeded', { flowId: '8' }),
      ev('4', 'succeeded', 'succeeded'),
    ], seen);
    expect(r).toEqual({ changed: true, unknown: false });
    expect([...seen]).toEqual(['1', '2']);
    expect([...statuses]).toEqual([['1', 'succeeded'], ['2', 'queued']]);
    expect(applyFlowEvents(statuses, '7', [ev('1', 'succeeded', 'succeeded', { flowId: '7' })])).toEqual({ changed: false, unknown: false });
    expect(applyFlowEvents(statuses, '7', [ev('9', 'enqueued', 'blocked', { flowId: '7' })])).toEqual({ changed: false, unknown: true });
    expect(applyFlowEvents(statuses, '7', [ev('9', 'deleted', 'succeeded', { flowId: '7' })])).toEqual({ changed: false, unknown: false });
  });
});

describe('flow status and counts', () => {
  it('is running while a job is unfinished, then succeeded or failed', () => {
    expect(flowStatusOf(countStatuses(['succeeded', 'blocked']))).toBe('running');
    expect(flowStatusOf(countStatuses(['succeeded', 'queued']))).toBe('running');
    expect(flowStatusOf(countStatuses(['succeeded', 'succeeded']))).toBe('succeeded');
    expect(flowStatusOf(countStatuses(['succeeded', 'cancelled']))).toBe('failed');
    expect(countStatuses(['failed', 'failed', 'running'])).toMatchObject({ failed: 2, running: 1, queued: 0 });
  });
});

describe('parentsWaitingText', () => {
  it('counts unfinished parents of all of them (a deleted parent has ended)', () => {
    const p = (status: JobStatus) => ({ status });
    expect(parentsWaitingText([p('running'), p('succeeded'), p('queued'), p('blocked'), p('failed')], 5)).toBe('waiting for 3 of 5 parents to end');
    expect(parentsWaitingText([p('running')], 2)).toBe('waiting for 1 of 2 parents to end');
    expect(parentsWaitingText([p('running')], 1)).toBe('waiting for 1 of 1 parent to end');
  });
});
