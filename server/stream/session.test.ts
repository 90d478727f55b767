// A stream session keeps, of what the fan-out hands it, only the events its filter matches: with
// ?job= and ?queue= together, an event must match both. (The fan-out routes a session by its job
// alone, so the session's own check is what keeps another queue's events out.)
import { expect, it } from 'vitest';
import type { FastifyReply } from 'fastify';
import type { JobEvent } from '../../queue/job.ts';
import { toMessage } from './fanout.ts';
import type { Flusher } from './flusher.ts';
import { DEFAULT_LIMITS, StreamSession, type StreamFilter } from './session.ts';

const event = (jobId: string, queue: string): JobEvent => ({
  eventId: '1', jobId, queue, kind: 'k', type: 'enqueued', status: 'queued', attempt: 0, worker: null,
  at: new Date(0).toISOString(), data: null, flowId: null, cursor: '1000.1',
});

/** How many of `events` a session with `filter` buffers (not live yet: nothing is written). */
function kept(filter: StreamFilter, events: JobEvent[]): number {
  const session = new StreamSession({} as FastifyReply, filter, DEFAULT_LIMITS, {} as Flusher, () => {});
  session.deliver(events.map(toMessage));
  return (session as unknown as { pending: unknown[] }).pending.length;
}

it('keeps an event only when it matches every filter given', () => {
  const events = [event('2', 'b')];
  expect(kept({ jobId: '2', queue: 'b' }, events)).toBe(1);
  // Caught: `||` for `&&` between the queue and job checks of StreamSession.matches.
  expect(kept({ jobId: '2', queue: 'a' }, events)).toBe(0);
  expect(kept({ jobId: '3', queue: 'b' }, events)).toBe(0);
  expect(kept({ queue: 'b' }, events)).toBe(1);
});
