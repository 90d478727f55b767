// `?wait=MS`: hold a reply until the job ends. Driven by the fan-out, not by polling the row:
// subscribe to the job's events FIRST, then read the row. An end that happened before the
// subscription shows in that read; one after it arrives as an event. The row is read again
// only when a terminal event arrives (or the wait runs out).
import type { Job } from '../../queue/job.ts';
import type { Queue } from '../../queue/queue.ts';
import { TERMINAL, type Fanout } from './fanout.ts';

export interface WaitResult {
  job: Job | null;
  /** True when the job is succeeded, failed or cancelled. */
  ended: boolean;
}

export async function waitForEnd(queue: Queue, fanout: Fanout, jobId: string, ms: number, signal?: AbortSignal): Promise<WaitResult> {
  let wake: (() => void) | null = null;
  let endedEvents = 0;
  const unsubscribe = fanout.watchJob(jobId, (e) => {
    if (!TERMINAL.has(e.status)) return;
    endedEvents++;
    wake?.();
  });
  const deadline = Date.now() + ms;
  try {
    for (;;) {
      const seen = endedEvents;
      const job = await queue.get(jobId);
      if (!job || TERMINAL.has(job.status)) return { job, ended: job !== null };
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted) return { job, ended: false };
      // Sleep until a terminal event (one may have come during the read), the deadline, or abort.
      if (endedEvents === seen) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, left);
          function done() {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            wake = null;
            resolve();
          }
          wake = done;
          signal?.addEventListener('abort', done);
        });
      }
    }
  } finally {
    unsubscribe();
  }
}
