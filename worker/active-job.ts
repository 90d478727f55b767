// A job this worker holds, from its claim until its outcome is written, and what is kept for it.
// Slots (slots.ts) moves it through these states:
//   buffered   claimed ahead of a free slot: leased and renewed like the others, it starts when a
//              slot frees, or goes back to the queue at shutdown or after a TTL
//   starting   a slot is reserved for it while `admit` asks the database whether it may still
//              start: its queue may have been paused (or limited) since the claim, or its
//              expireAt may have passed. Refused jobs go back to the queue (`refused`).
//   running    its handler is executing (it occupies a slot)
//   finishing  its handler is done and the outcome waits in the batcher (its lease is renewed)
//   writing    its outcome is being written right now (not renewed meanwhile: the two writes
//              would lock the same rows, possibly in different orders)
//   abandoned  the lease was lost, or shutdown released the job: the signal fired and the
//              outcome will never be written. It is forgotten at once (no more renewals), but a
//              handler that ignores its signal keeps its slot until it returns.
import type { Span } from '@opentelemetry/api';
import type { ClaimedJob } from '../queue/claimed.ts';
import type { Lease } from '../queue/queue.ts';
import type { DurableRun } from './durable.ts';
import type { ProgressCoalescer } from './progress.ts';

export interface ActiveJob {
  job: ClaimedJob;
  lease: Lease;
  /** Made when the handler first reads ctx.signal: most handlers never do. */
  controller?: AbortController;
  /** Why it was aborted (cancel, timeout, lost lease, shutdown); unset while it is not. */
  aborted?: Error;
  state: 'buffered' | 'starting' | 'running' | 'finishing' | 'writing' | 'abandoned';
  /** When it was claimed (performance.now()): buffered jobs past their TTL go back. */
  claimedAt: number;
  /** Set when the timeout recorded the outcome: what the handler returns later is ignored. */
  timedOut?: boolean;
  /** Its progress reports, coalesced (made when the handler first runs). */
  progress?: ProgressCoalescer;
  /**
   * When (performance.now()) its lease runs out as this worker counts it, from the last claim or
   * renewal that reached the database: past it, the handler is stopped (see overdue()).
   */
  deadline: number;
  /** Its durable calls (ctx.step, sleep, waitFor, invoke), made at the first one. */
  durable?: DurableRun;
  /** The run ended to sleep or wait: its slot is free, whatever the handler's promise does. */
  suspended?: boolean;
  /** The run's process span, kept only while tracing, so a run that ends to wait ends it too. */
  span?: Span;
}
