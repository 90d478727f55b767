// A durable job's steps as its page lists them: what GET /api/jobs/:id/steps read, and the steps
// whose `step` events came since (their result comes with the next read). A read never drops a
// step an event brought: it may have been answered before that step was stored.
import type { BoardEvent, Step } from '../types';

/** A step on the page; `result` is undefined while only its event is known. */
export type StepRow = Omit<Step, 'startedAt' | 'result'> & { startedAt: string | null; result?: unknown };

const key = (s: { name: string; occurrence: number }) => `${s.occurrence}\u0000${s.name}`;

/** The steps a read returned, in their order, then the ones only events brought, in theirs. */
export function mergeRead(read: Step[], shown: StepRow[]): StepRow[] {
  const got = new Set(read.map(key));
  return [...read, ...shown.filter((s) => !got.has(key(s)))];
}

/** Adds the step of a `step` event (data {name, occurrence, ms}); null when it is not one or already shown. */
export function addStepEvent(shown: StepRow[], ev: BoardEvent): StepRow[] | null {
  const d = ev.data;
  if (ev.type !== 'step' || !d || typeof d.name !== 'string') return null;
  const row: StepRow = {
    name: d.name,
    occurrence: typeof d.occurrence === 'number' ? d.occurrence : 0,
    attempt: ev.attempt,
    startedAt: null,
    finishedAt: ev.at,
    ms: typeof d.ms === 'number' ? d.ms : 0,
  };
  return shown.some((s) => key(s) === key(row)) ? null : [...shown, row];
}

/** A step's result on one line, cut to `max` characters. */
export function resultSummary(result: unknown, max = 100): string {
  const text = JSON.stringify(result) ?? 'undefined';
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
