// The framework-free half of the board's store: everything here is plain TypeScript so that
// store.test.ts can drive it without a browser. store.svelte.ts wires it to Svelte state and to
// the real EventSource / requestAnimationFrame.

import type { CountBucket, EventType, Job, JobEvent, JobFilter, JobStatus, QueueCounts, StreamState } from './types';

// ---------------------------------------------------------------------------------------------
// Event batching: the stream can deliver thousands of events a second; the board applies them
// once per animation frame so the DOM is touched once per frame, not once per event.

export type Scheduler = (run: () => void) => void;

export class EventBatcher<T> {
  #queue: T[] = [];
  #pending = false;

  constructor(
    private readonly onFlush: (batch: T[]) => void,
    private readonly schedule: Scheduler,
  ) {}

  push(item: T): void {
    this.#queue.push(item);
    if (!this.#pending) {
      this.#pending = true;
      this.schedule(() => this.flush());
    }
  }

  /** Applies everything queued so far in one call. Safe to call early (the scheduled run is then a no-op). */
  flush(): void {
    this.#pending = false;
    if (this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    this.onFlush(batch);
  }

  get size(): number {
    return this.#queue.length;
  }
}

/**
 * Next animation frame, with a timer as a fallback: browsers stop animation frames in hidden
 * tabs, and the queue must not grow without bound meanwhile.
 */
export function frameScheduler(run: () => void): void {
  let done = false;
  let frame = 0;
  const go = () => {
    if (done) return;
    done = true;
    if (typeof cancelAnimationFrame === 'function') cancelAnimationFrame(frame);
    clearTimeout(timer);
    run();
  };
  const timer = setTimeout(go, 250);
  if (typeof requestAnimationFrame === 'function') frame = requestAnimationFrame(go);
}

// ---------------------------------------------------------------------------------------------
// Duplicate guard. The server sends every event exactly once per cursor, but a hand-made
// reconnect can overlap with what the browser already delivered; a bounded set makes that harmless.

export class RecentIds {
  // Two generations instead of one insertion-ordered Set: evicting a Set's oldest entry over and
  // over is slow in V8 (iteration skips the deleted slots), and this runs for every event.
  #current = new Set<string>();
  #previous = new Set<string>();
  constructor(private readonly cap = 20_000) {}

  /** True when the id is new (and remembers it), false for a duplicate. Remembers at least the last cap/2. */
  add(id: string): boolean {
    if (this.#current.has(id) || this.#previous.has(id)) return false;
    this.#current.add(id);
    if (this.#current.size >= this.cap / 2) {
      this.#previous = this.#current;
      this.#current = new Set();
    }
    return true;
  }
}

// ---------------------------------------------------------------------------------------------
// Normalising what the server sends. `/api/jobs/:id/events` rows may name the id `id` rather
// than `eventId`; ids may arrive as numbers. The board works with strings throughout.

export function normalizeEvent(raw: unknown): JobEvent | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  const eventId = r.eventId ?? r.id;
  const jobId = r.jobId ?? r.job_id;
  if (eventId == null || jobId == null || typeof r.type !== 'string') return null;
  return {
    eventId: String(eventId),
    jobId: String(jobId),
    queue: String(r.queue ?? ''),
    kind: String(r.kind ?? ''),
    type: r.type as EventType,
    status: r.status as JobStatus,
    attempt: typeof r.attempt === 'number' ? r.attempt : Number(r.attempt ?? 0),
    worker: (r.worker as string | null) ?? null,
    at: String(r.at ?? new Date().toISOString()),
    data: r.data && typeof r.data === 'object' ? (r.data as Record<string, unknown>) : null,
  };
}

/** Compares digit-string ids numerically without BigInt: longer is larger, then lexicographic. */
export function compareIds(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// Status and count bookkeeping.

/** The `/api/queues` bucket of a job: queued with a future runAt is `scheduled`. */
export function bucketOf(status: JobStatus, runAt: string | null | undefined, now: number): CountBucket {
  if (status === 'queued' && runAt) {
    const t = Date.parse(runAt);
    if (Number.isFinite(t) && t > now) return 'scheduled';
  }
  return status;
}

/** The runAt an event carries, when its type carries one. */
export function eventRunAt(ev: JobEvent): string | null {
  const r = ev.data?.runAt;
  return typeof r === 'string' ? r : null;
}

/**
 * What the job's bucket was before an event, judged from the event type alone, for jobs the
 * board has not seen yet. `null` = the job did not exist (enqueued); `undefined` = cannot tell.
 */
export function inferPrevBucket(type: EventType): CountBucket | null | undefined {
  switch (type) {
    case 'enqueued':
      return null;
    case 'claimed':
      return 'queued';
    case 'progress':
    case 'cancel_requested':
    case 'succeeded':
    case 'failed':
    case 'retry_scheduled':
    case 'lease_expired':
    case 'released':
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
  next: CountBucket;
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
  seed(job: Pick<Job, 'id' | 'queue' | 'kind' | 'status' | 'attempt' | 'runAt' | 'lockedBy'>, now: number): void {
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
  apply(ev: JobEvent, now: number): Transition {
    const known = this.get(ev.jobId);
    const prev = known ? known.bucket : inferPrevBucket(ev.type);
    const next = bucketOf(ev.status, eventRunAt(ev), now);
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

export function emptyCounts(queue: string): QueueCounts {
  return { queue, queued: 0, scheduled: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
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
  row[t.next] += 1;
  return true;
}

export function sortQueues(queues: QueueCounts[]): QueueCounts[] {
  return [...queues].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
}

// ---------------------------------------------------------------------------------------------
// Applying events to job rows (jobs table and job detail share this).

const TERMINAL: EventType[] = ['succeeded', 'failed', 'cancelled'];

export function isTerminalEvent(type: EventType): boolean {
  return TERMINAL.includes(type);
}

/** Updates a job object in place from one of its events. */
export function applyEventToJob(job: Job, ev: JobEvent): void {
  const d = ev.data ?? {};
  job.status = ev.status;
  job.attempt = ev.attempt;
  const releaseLock = () => {
    job.lockedBy = null;
    job.leaseExpiresAt = null;
  };
  switch (ev.type) {
    case 'claimed':
      job.lockedBy = ev.worker;
      job.leaseExpiresAt = typeof d.leaseExpiresAt === 'string' ? d.leaseExpiresAt : job.leaseExpiresAt;
      job.startedAt = ev.at;
      job.progress = null;
      break;
    case 'progress':
      job.progress = {
        percent: clampPercent(Number(d.percent ?? 0)),
        message: typeof d.message === 'string' ? d.message : null,
      };
      if (ev.worker) job.lockedBy = ev.worker;
      break;
    case 'succeeded':
      releaseLock();
      job.finishedAt = ev.at;
      break;
    case 'retry_scheduled':
      releaseLock();
      job.lastError = eventError(ev) ?? job.lastError;
      if (typeof d.runAt === 'string') job.runAt = d.runAt;
      break;
    case 'failed':
      releaseLock();
      job.lastError = eventError(ev) ?? job.lastError;
      job.finishedAt = ev.at;
      break;
    case 'cancel_requested':
      job.cancelRequested = true;
      break;
    case 'cancelled':
      releaseLock();
      job.finishedAt = ev.at;
      break;
    case 'lease_expired':
    case 'released':
      if (ev.status !== 'running') releaseLock();
      if (typeof d.runAt === 'string') job.runAt = d.runAt;
      if (ev.status !== 'queued' && ev.status !== 'running') job.finishedAt = ev.at;
      break;
    case 'retried':
      releaseLock();
      job.finishedAt = null;
      job.cancelRequested = false;
      job.progress = null;
      break;
    default:
      break;
  }
}

/**
 * The error a retry_scheduled / failed event carries. The server's events hold the message as a
 * string (`data.error`); an object with a `message` is accepted too.
 */
export function eventError(ev: JobEvent): { message: string } | null {
  const e = ev.data?.error;
  if (typeof e === 'string') return { message: e };
  if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return e as { message: string };
  return null;
}

export function clampPercent(p: number): number {
  if (!Number.isFinite(p)) return 0;
  return Math.min(100, Math.max(0, p));
}

/** A table row for a job the board only knows from the stream. */
export function jobFromEvent(ev: JobEvent): Job {
  const d = ev.data ?? {};
  const job: Job = {
    id: ev.jobId,
    queue: ev.queue,
    kind: ev.kind,
    payload: undefined,
    priority: typeof d.priority === 'number' ? d.priority : null,
    status: ev.status,
    attempt: ev.attempt,
    maxAttempts: null,
    requires: [],
    idempotencyKey: null,
    runAt: typeof d.runAt === 'string' ? d.runAt : ev.type === 'enqueued' ? ev.at : null,
    createdAt: ev.type === 'enqueued' ? ev.at : null,
    startedAt: null,
    finishedAt: null,
    lockedBy: null,
    leaseExpiresAt: null,
    cancelRequested: false,
    progress: null,
    result: null,
    lastError: null,
    partial: true,
  };
  applyEventToJob(job, ev);
  return job;
}

export function matchesFilter(job: { queue: string; kind: string; status: string }, f: JobFilter): boolean {
  if (f.queue && job.queue !== f.queue) return false;
  if (f.kind && job.kind !== f.kind) return false;
  if (f.status && job.status !== f.status) return false;
  return true;
}

/**
 * Applies a batch of events to the first page of the jobs table (newest first, by id).
 * Rows on the page are updated in place. A job not on the page is added at its sorted place when,
 * after the event, it matches the filter and belongs on this page; then the page is trimmed to
 * `limit` rows and the returned `next` cursor follows the last kept row.
 * Rows that stop matching the filter stay (marked by the caller) so nothing jumps under the pointer.
 * With `firstPage: false` nothing is added, and the events of jobs not on the page come back in
 * `missed` (the jobs table applies those to page one a few times a second, not every frame).
 */
export function mergeIntoPage(
  rows: Job[],
  batch: JobEvent[],
  opts: { filter: JobFilter; limit: number; firstPage: boolean; next: string | null },
): { rows: Job[]; next: string | null; changed: boolean; missed: JobEvent[] } {
  const byId = new Map<string, Job>();
  for (const r of rows) byId.set(r.id, r);
  let added: Job[] | null = null;
  const missed: JobEvent[] = [];
  for (const ev of batch) {
    const row = byId.get(ev.jobId);
    if (row) {
      applyEventToJob(row, ev);
      continue;
    }
    if (!opts.firstPage) {
      missed.push(ev);
      continue;
    }
    if (!matchesFilter(ev, opts.filter)) continue;
    const job = jobFromEvent(ev);
    byId.set(job.id, job);
    (added ??= []).push(job);
  }
  if (!added) return { rows, next: opts.next, changed: false, missed };

  const full = rows.length >= opts.limit || opts.next !== null;
  const oldest = rows.length ? rows[rows.length - 1].id : null;
  // A job older than the page's last row belongs to a later page when the page is full.
  const fits = added.filter((j) => !full || oldest === null || compareIds(j.id, oldest) > 0);
  if (fits.length === 0) return { rows, next: opts.next, changed: false, missed };

  const merged = [...rows, ...fits].sort((a, b) => compareIds(b.id, a.id));
  if (merged.length <= opts.limit) return { rows: merged, next: opts.next, changed: true, missed };
  const kept = merged.slice(0, opts.limit);
  return { rows: kept, next: kept[kept.length - 1].id, changed: true, missed };
}

// ---------------------------------------------------------------------------------------------
// Rates and latency, per second, over a sliding window, computed from the stream.

export interface SeriesData {
  x: number[]; // epoch seconds
  enqueued: number[];
  succeeded: number[];
  failed: number[];
  lagAvg: (number | null)[];
  lagMax: (number | null)[];
}

export class RateSeries {
  readonly window: number;
  #sec: Float64Array;
  #enq: Float64Array;
  #succ: Float64Array;
  #fail: Float64Array;
  #lagSum: Float64Array;
  #lagN: Float64Array;
  #lagMax: Float64Array;
  #latest = 0;

  constructor(windowSec = 300) {
    this.window = windowSec;
    this.#sec = new Float64Array(windowSec).fill(-1);
    this.#enq = new Float64Array(windowSec);
    this.#succ = new Float64Array(windowSec);
    this.#fail = new Float64Array(windowSec);
    this.#lagSum = new Float64Array(windowSec);
    this.#lagN = new Float64Array(windowSec);
    this.#lagMax = new Float64Array(windowSec);
  }

  /** Buckets by the event's own time, so a replay after a reconnect lands where it happened. */
  add(ev: JobEvent, now = Date.now()): void {
    let t = Date.parse(ev.at);
    if (!Number.isFinite(t)) t = now;
    const sec = Math.floor(t / 1000);
    if (sec <= this.#latest - this.window) return; // older than the window
    if (sec > this.#latest) this.#latest = sec;
    const i = this.#slot(sec);
    switch (ev.type) {
      case 'enqueued':
        this.#enq[i] += 1;
        break;
      case 'succeeded':
        this.#succ[i] += 1;
        break;
      case 'failed':
        this.#fail[i] += 1;
        break;
      case 'claimed': {
        const lag = Number(ev.data?.lagMs);
        if (Number.isFinite(lag)) {
          this.#lagSum[i] += lag;
          this.#lagN[i] += 1;
          if (lag > this.#lagMax[i]) this.#lagMax[i] = lag;
        }
        break;
      }
    }
  }

  #slot(sec: number): number {
    const i = ((sec % this.window) + this.window) % this.window;
    if (this.#sec[i] !== sec) {
      this.#sec[i] = sec;
      this.#enq[i] = this.#succ[i] = this.#fail[i] = 0;
      this.#lagSum[i] = this.#lagN[i] = this.#lagMax[i] = 0;
    }
    return i;
  }

  /** The window's complete seconds up to (not including) the current one. */
  data(now = Date.now()): SeriesData {
    const end = Math.max(Math.floor(now / 1000), this.#latest) - 1;
    const out: SeriesData = { x: [], enqueued: [], succeeded: [], failed: [], lagAvg: [], lagMax: [] };
    for (let sec = end - this.window + 1; sec <= end; sec++) {
      const i = ((sec % this.window) + this.window) % this.window;
      const live = this.#sec[i] === sec;
      out.x.push(sec);
      out.enqueued.push(live ? this.#enq[i] : 0);
      out.succeeded.push(live ? this.#succ[i] : 0);
      out.failed.push(live ? this.#fail[i] : 0);
      const n = live ? this.#lagN[i] : 0;
      out.lagAvg.push(n ? this.#lagSum[i] / n : null);
      out.lagMax.push(n ? this.#lagMax[i] : null);
    }
    return out;
  }

  /** Totals over the last `seconds` complete seconds. */
  totals(seconds: number, now = Date.now()) {
    const d = this.data(now);
    const from = Math.max(0, d.x.length - seconds);
    let enqueued = 0, succeeded = 0, failed = 0, lagSum = 0, lagN = 0, lagMax: number | null = null;
    for (let k = from; k < d.x.length; k++) {
      enqueued += d.enqueued[k];
      succeeded += d.succeeded[k];
      failed += d.failed[k];
      const i = ((d.x[k] % this.window) + this.window) % this.window;
      if (this.#sec[i] === d.x[k] && this.#lagN[i]) {
        lagSum += this.#lagSum[i];
        lagN += this.#lagN[i];
        lagMax = Math.max(lagMax ?? 0, this.#lagMax[i]);
      }
    }
    return { enqueued, succeeded, failed, lagAvg: lagN ? lagSum / lagN : null, lagMax };
  }
}

// ---------------------------------------------------------------------------------------------
// The stream connection. One EventSource per tab. The browser reconnects by itself (sending
// Last-Event-ID) while the source is CONNECTING; when it gives up (CLOSED: the server answered
// with an error status), we make a new one with backoff and `?lastEventId=` so nothing is missed.

export interface SourceLike {
  readonly readyState: number; // 0 CONNECTING, 1 OPEN, 2 CLOSED
  onopen: ((ev: Event) => unknown) | null;
  onerror: ((ev: Event) => unknown) | null;
  addEventListener(type: string, fn: (ev: MessageEvent) => void): void;
  close(): void;
}

export const CLOSED = 2;
export const CONNECTING = 0;

export function streamUrl(base: string, opts: { token?: string | null; lastEventId?: string | null }): string {
  const params = new URLSearchParams();
  if (opts.token) params.set('token', opts.token);
  if (opts.lastEventId != null && opts.lastEventId !== '') params.set('lastEventId', opts.lastEventId);
  const q = params.toString();
  return q ? `${base}${base.includes('?') ? '&' : '?'}${q}` : base;
}

/** Exponential backoff with jitter: 0.5 s, 1 s, 2 s … capped at 15 s. */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(15_000, 500 * 2 ** Math.max(0, attempt));
  return Math.round(base * (0.5 + random() / 2));
}

export interface StreamClientOptions {
  url: string;
  createSource: (url: string) => SourceLike;
  getToken: () => string | null;
  onState: (state: StreamState) => void;
  onEvent: (ev: JobEvent) => void;
  /** Called on every open. `resumed` is false when no cursor was known: the caller should reload. */
  onOpen?: (info: { first: boolean; resumed: boolean }) => void;
  /** Called when the source failed hard (before the retry is scheduled). */
  onHardFailure?: () => void;
  /** When false at retry time, the client waits for `restart()` (e.g. a token is needed). */
  canConnect?: () => boolean;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (t: unknown) => void;
  random?: () => number;
}

export class StreamClient {
  /** The last `id:` cursor seen; sent back on a hand-made reconnect. */
  lastId: string | null = null;
  state: StreamState = 'connecting';
  #source: SourceLike | null = null;
  #failures = 0;
  #opened = false;
  #timer: unknown = null;
  #stopped = true;
  #resumeFrom: string | null = null;

  constructor(private readonly o: StreamClientOptions) {}

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#connect();
  }

  stop(): void {
    this.#stopped = true;
    this.#clearTimer();
    this.#source?.close();
    this.#source = null;
  }

  /** Drops the current source and connects again now (after a token change, say), resuming from the cursor. */
  restart(): void {
    this.#stopped = true;
    this.#clearTimer();
    this.#source?.close();
    this.#source = null;
    this.#failures = 0;
    this.#stopped = false;
    this.#setState(this.#opened ? 'reconnecting' : 'connecting');
    this.#connect();
  }

  #setState(s: StreamState): void {
    if (this.state === s) return;
    this.state = s;
    this.o.onState(s);
  }

  #clearTimer(): void {
    if (this.#timer !== null) (this.o.clearTimer ?? clearTimeout)(this.#timer as ReturnType<typeof setTimeout>);
    this.#timer = null;
  }

  #connect(): void {
    this.#resumeFrom = this.lastId;
    const url = streamUrl(this.o.url, { token: this.o.getToken(), lastEventId: this.lastId });
    const src = this.o.createSource(url);
    this.#source = src;

    src.onopen = () => {
      if (src !== this.#source) return;
      const first = !this.#opened;
      this.#opened = true;
      this.#failures = 0;
      this.#setState('live');
      this.o.onOpen?.({ first, resumed: this.#resumeFrom !== null });
    };

    const onMessage = (m: MessageEvent) => {
      if (src !== this.#source) return;
      if (m.lastEventId) this.lastId = m.lastEventId;
      let parsed: unknown;
      try {
        parsed = JSON.parse(String(m.data));
        // Tolerate a server that JSON-encodes the already-encoded event (a string of JSON).
        if (typeof parsed === 'string') parsed = JSON.parse(parsed);
      } catch {
        return;
      }
      const ev = normalizeEvent(parsed);
      if (ev) this.o.onEvent(ev);
    };
    src.addEventListener('job', onMessage);
    src.addEventListener('message', onMessage); // in case a server omits `event: job`

    src.onerror = () => {
      if (src !== this.#source || this.#stopped) return;
      if (src.readyState === CLOSED) {
        // The browser gave up: our turn, with backoff and the cursor.
        src.close();
        this.#source = null;
        this.#setState(this.#opened ? 'reconnecting' : 'connecting');
        this.o.onHardFailure?.();
        this.#scheduleRetry();
      } else {
        // CONNECTING: the browser retries on its own and resends Last-Event-ID.
        // The cursor it resends is the last id it saw, which is ours too.
        this.#resumeFrom = this.lastId;
        this.#setState(this.#opened ? 'reconnecting' : 'connecting');
      }
    };
  }

  #scheduleRetry(): void {
    const delay = backoffDelay(this.#failures++, this.o.random);
    this.#clearTimer();
    this.#timer = (this.o.setTimer ?? setTimeout)(() => {
      this.#timer = null;
      if (this.#stopped) return;
      if (this.o.canConnect && !this.o.canConnect()) return; // restart() resumes
      this.#connect();
    }, delay);
  }
}
