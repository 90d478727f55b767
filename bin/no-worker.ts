// `herald enqueue` of a kind no live worker runs (a typo, or workers not started yet): the job is
// written and waits, and its queue would look stalled. Say so at once, on stderr.
import type { Job } from '../queue/job.ts';
import type { Queue } from '../queue/queue.ts';

/** A warning when no live worker takes `job` (its queue, kind and requires), else null. */
export async function noWorkerWarning(queue: Queue, job: Pick<Job, 'kind' | 'queue' | 'requires'>): Promise<string | null> {
  const workers = (await queue.workers()).filter((w) => w.kinds !== null);
  const takes = workers.filter((w) => w.queues === null || w.queues.includes(job.queue));
  if (takes.some((w) => w.kinds!.includes(job.kind) && job.requires.every((r) => (w.capabilities ?? []).includes(r)))) return null;
  const known = [...new Set(takes.flatMap((w) => w.kinds!))].sort();
  const why = takes.some((w) => w.kinds!.includes(job.kind))
    ? `no live worker of queue ${job.queue} offers ${job.requires.join(', ')}`
    : known.length
      ? `no live worker of queue ${job.queue} runs kind "${job.kind}" (they run: ${known.join(', ')})`
      : `no live worker takes queue ${job.queue}`;
  return `${why}; the job waits until one does (waitingFor: no_worker)`;
}
