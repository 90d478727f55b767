// Status and count bookkeeping: which `/api/queues` bucket each job is in, so every stream event
// moves exactly one count without refetching.
import { COUNT_BUCKETS, type BoardEvent, type BoardJob, type CountBucket, type EventType, type JobStatus, type QueueCounts } from '../types';

const FAR_AHEAD = '9999-12-31T00:00:00.000Z';

/** Events that leave a job where it was (a step stored, a signal kept, a run resuming). */
const IN_PLACE: EventType[] = ['step', 'signalled', 'resumed'];

export function bucketOf(status: JobStatus, runAt: string | null | undefined, now: number): CountBucket {
  if (status === 'queued' && runAt) {
    const t = Date.parse(runAt);
    if (Number.isFinite(t) && t > now) return 'scheduled';
  }
  return status;
}

/** The runAt an event carries, when its type carries one. */
function eventRunAt(ev: BoardEvent): string | null {
  // A sleep or wait carries its wake-up time as `until`; a wait without one is as far ahead.
  const r = ev.data?.runAt ?? ev.data?.until;
  if (ev.type === 'waiting' && typeof r !== 'string') return FAR_AHEAD;
  return typeof r === 'string' ? r : null;
}

/**
 * What the job's bucket was before an event, judged from the event type alone, for jobs the
 * board has not seen yet. `null` = the job did not exist (enqueued); `undefined` = cannot tell.
 */
function inferPrevBucket(type: EventType): CountBucket | null | undefined {
  switch (type) {
    case 'enqueued':
      return null;
    case 'claimed':
      return 'queued';
    case 'unblocked':
      return 'blocked';
    case 'promoted':
      return 'scheduled';
    case 'progress':
    case 'cancel_requested':
    case 'succeeded':
    case 'failed':
    case 'retry_scheduled':
    case 'lease_expired':
    case 'released':
    case 'sleeping':
    case 'waiting':
    case 'step':
    case 'resumed':
      return 'running';
    default:
      // cancelled (from queued or running), retried (from failed or cancelled)
      return undefined;
  }
}

export interface JobSnapshot {
  id: string;
  queue: string;
  kind: string;
  status: JobStatus;
  bucket: CountBucket;
  attempt: number;
  worker: string | null;
}

export interface Transition {
  queue: string;
  prev: CountBucket | null | undefined;
  /** null: the job is gone (a bulk delete), it counts nowhere now. */
  next: CountBucket | null;
}

/**
 * The live job index: the last known status of every job the board has heard of, so a new event
 * tells exactly which count to move. Bounded; the least recently touched jobs fall out first.
 */
export class LiveIndex {
  // Bounded with two generations (see RecentIds): a job touched recently is in `current`; when
  // `current` fills up it becomes `previous` and the old `previous` is dropped.
  #current = new Map<string, JobSnapshot>();
  #previous = new Map<string, JobSnapshot>();
  constructor(private readonly cap = 50_000) {}

  get(id: string): JobSnapshot | undefined {
    return this.#current.get(id) ?? this.#previous.get(id);
  }

  get size(): number {
    let n = this.#current.size;
    for (const id of this.#previous.keys()) if (!this.#current.has(id)) n++;
    return n;
  }

  /** Records a job fetched over HTTP, unless the stream already told us something newer. */
  seed(job: Pick<BoardJob, 'id' | 'queue' | 'kind' | 'status' | 'attempt' | 'runAt' | 'lockedBy'>, now: number): void {
    if (this.get(job.id)) return;
    this.#put({
      id: job.id,
      queue: job.queue,
      kind: job.kind,
      status: job.status,
      bucket: bucketOf(job.status, job.runAt, now),
      attempt: job.attempt,
      worker: job.lockedBy,
    });
  }

  /** Records an event and says which bucket the job left and which it entered. */
  apply(ev: BoardEvent, now: number): Transition {
    const known = this.get(ev.jobId);
    const prev = known ? known.bucket : inferPrevBucket(ev.type);
    if (ev.type === 'deleted') {
      this.#current.delete(ev.jobId);
      this.#previous.delete(ev.jobId);
      return { queue: ev.queue, prev, next: null };
    }
    const next = known && IN_PLACE.includes(ev.type) ? known.bucket : bucketOf(ev.status, eventRunAt(ev), now);
    this.#put({
      id: ev.jobId,
      queue: ev.queue,
      kind: ev.kind,
      status: ev.status,
      bucket: next,
      attempt: ev.attempt,
      worker: ev.status === 'running' ? (ev.worker ?? known?.worker ?? null) : null,
    });
    return { queue: ev.queue, prev, next };
  }

  #put(s: JobSnapshot): void {
    this.#current.set(s.id, s);
    if (this.#current.size >= this.cap / 2) {
      this.#previous = this.#current;
      this.#current = new Map();
    }
  }
}

/** A queue first seen on the stream: no counts yet, and no settings until /api/queues says so. */
function emptyCounts(queue: string): QueueCounts {
  return {
    queue, queued: 0, scheduled: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0,
    paused: false, concurrency: null, groupConcurrency: null, rateLimit: null, deadLetter: null, updatedBy: null, updatedAt: null,
  };
}

/**
 * Moves one job between buckets in a queue's counts. Works on plain arrays and on Svelte state
 * proxies alike. Returns false when the previous bucket is unknown: then nothing moves, and the
 * throttled `/api/queues` refetch sets things right.
 */
export function applyTransition(queues: QueueCounts[], t: Transition): boolean {
  if (t.prev === undefined) return false;
  if (t.prev === t.next) return true;
  let row = queues.find((q) => q.queue === t.queue);
  if (!row) {
    const at = queues.findIndex((q) => q.queue > t.queue);
    const fresh = emptyCounts(t.queue);
    if (at === -1) queues.push(fresh);
    else queues.splice(at, 0, fresh);
    row = queues.find((q) => q.queue === t.queue)!;
  }
  if (t.prev !== null) row[t.prev] = Math.max(0, row[t.prev] - 1);
  if (t.next !== null) row[t.next] += 1;
  return true;
}

/**
 * Every move of a frame, with the same result as applyTransition one by one, but worked out on
 * plain copies of the touched rows and written back once per changed count: on Svelte state each
 * write notifies its readers, and a frame can bring thousands of moves for one queue.
 */
export function applyTransitions(queues: QueueCounts[], ts: readonly Transition[]): void {
  const touched = new Set<string>();
  for (const t of ts) if (t.prev !== undefined && t.prev !== t.next) touched.add(t.queue);
  if (touched.size === 0) return;
  const work = queues.filter((q) => touched.has(q.queue)).map((q) => ({ ...q }));
  for (const t of ts) applyTransition(work, t);
  for (const row of work) {
    const live = queues.find((q) => q.queue === row.queue);
    if (live) {
      for (const b of COUNT_BUCKETS) if (live[b] !== row[b]) live[b] = row[b];
      continue;
    }
    const at = queues.findIndex((q) => q.queue > row.queue);
    if (at === -1) queues.push(row);
    else queues.splice(at, 0, row);
  }
}

export function sortQueues(queues: QueueCounts[]): QueueCounts[] {
  return [...queues].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
}
