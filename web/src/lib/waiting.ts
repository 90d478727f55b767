// Why a queued job is not running, in words a person reads on the job page.
import type { Job } from './types';

export function waitingText(job: Pick<Job, 'id' | 'wait' | 'waitingFor' | 'queue' | 'group' | 'runAt' | 'kind' | 'requires'>): string | null {
  switch (job.waitingFor) {
    case 'scheduled':
      return `It is scheduled: it will not start before its run-at time.`;
    case 'paused':
      return `Its queue "${job.queue}" is paused. It starts when the queue is resumed.`;
    case 'concurrency':
      return `Its queue "${job.queue}" already runs as many jobs as its concurrency limit allows. It starts when one of them ends.`;
    case 'group_concurrency':
      return `Its group "${job.group}" already runs as many jobs as the queue's per-group limit allows. It starts when one of them ends.`;
    case 'rate_limit':
      return `Its queue "${job.queue}" has started as many jobs as its rate limit allows in the current window. It starts when the window moves on.`;
    case 'no_worker': {
      const needs = job.requires?.length ? ` and offers ${job.requires.join(', ')}` : '';
      return `No live worker takes queue "${job.queue}" with a task for "${job.kind}"${needs}. Start one (herald worker) and it runs.`;
    }
    case 'sleep':
      return `Its handler sleeps until its run-at time; no worker slot is held meanwhile.`;
    case 'signal':
      return `Its handler waits for the signal "${job.wait?.name ?? ''}"${job.wait?.until ? ' (or its timeout, at the run-at time)' : ''}. Send it below, or with POST /api/jobs/${job.id}/signals/NAME.`;
    case 'child':
      return `Its handler waits for job ${job.wait?.childId ?? ''}, which it invoked. It resumes when that job ends.`;
    default:
      return null;
  }
}
