// A durable job's step list (steps.ts): rows from `step` events at once, results from reads, and a
// read that was answered before a step was stored never drops that step.
import { describe, expect, it } from 'vitest';
import type { Step } from '../types';
import { addStepEvent, mergeRead, resultSummary } from './steps';
import { ev } from './test-events';

const stored = (name: string, occurrence = 0, result: unknown = name): Step => ({
  name, occurrence, attempt: 1, startedAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-01T00:00:01Z', ms: 1000, result,
});

describe('steps', () => {
  // Mutation caught: mergeRead returning the read alone (a step event newer than the read vanishes until the next one).
  it('adds a step from its event, keeps it across an older read, and takes its result from a newer one', () => {
    let rows = addStepEvent([], ev('1', 'step', 'running', { data: { name: 'charge', occurrence: 0, ms: 12 } }))!;
    rows = addStepEvent(rows, ev('1', 'step', 'running', { data: { name: 'ship', occurrence: 0, ms: 3 } }))!;
    expect(rows.map((r) => [r.name, r.ms, r.result])).toEqual([['charge', 12, undefined], ['ship', 3, undefined]]);
    expect(addStepEvent(rows, ev('1', 'step', 'running', { data: { name: 'ship', occurrence: 0, ms: 3 } }))).toBeNull();
    expect(addStepEvent(rows, ev('1', 'progress', 'running', { data: { percent: 5 } }))).toBeNull();
    rows = mergeRead([stored('charge', 0, { receipt: 'r1' })], rows);
    expect(rows.map((r) => [r.name, r.result])).toEqual([['charge', { receipt: 'r1' }], ['ship', undefined]]);
    rows = mergeRead([stored('charge', 0, { receipt: 'r1' }), stored('ship', 0, 7)], rows);
    expect(rows.map((r) => [r.name, r.result])).toEqual([['charge', { receipt: 'r1' }], ['ship', 7]]);
  });

  it('tells occurrences of one name apart, and cuts a long result', () => {
    const rows = mergeRead([stored('poll', 0), stored('poll', 1)], []);
    expect(addStepEvent(rows, ev('1', 'step', 'running', { data: { name: 'poll', occurrence: 2, ms: 1 } }))).toHaveLength(3);
    expect(resultSummary({ a: 'x'.repeat(200) }, 20)).toBe('{"a":"xxxxxxxxxxxxx…');
    expect(resultSummary(null)).toBe('null');
  });
});
