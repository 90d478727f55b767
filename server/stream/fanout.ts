// The in-memory fan-out: the tailer publishes each page of events once, and every SSE session,
// every `?wait` request and the metrics see it from here. Nothing in this file touches the
// database, so a thousand clients cost a thousand array pushes per event, not a thousand queries.
import type { JobEvent } from '../../queue/job.ts';
import type { JobStatus } from '../../queue/schema/index.ts';

/** One event ready to send: its SSE frame is encoded once, whatever the number of clients. */
export interface StreamMessage {
  event: JobEvent;
  /** The cursor as numbers, for the replay→live hand-over comparison. */
  tx: bigint;
  id: bigint;
  /** `id:`, `event: job` and one `data:` line (JSON has no raw newline): every socket gets this same Buffer. */
  frame: Buffer;
  /**
   * The same frame as one HTTP/1.1 chunk (size line, frame, CRLF), for a chunked response's
   * socket: one write of one shared Buffer per client. `frame` is a view into it.
   */
  chunk: Buffer;
  bytes: number;
}

export function toMessage(e: JobEvent): StreamMessage {
  const { cursor, ...data } = e;
  const dot = cursor.indexOf('.');
  const text = `id: ${cursor}\nevent: job\ndata: ${JSON.stringify(data)}\n\n`;
  const length = Buffer.byteLength(text);
  const size = `${length.toString(16)}\r\n`;
  const chunk = Buffer.from(`${size}${text}\r\n`);
  const frame = chunk.subarray(size.length, size.length + length);
  return { event: e, tx: BigInt(cursor.slice(0, dot)), id: BigInt(cursor.slice(dot + 1)), frame, chunk, bytes: length };
}

/** Orders two positions like the feed does: by (tx, id). */
export function compareMessage(a: { tx: bigint; id: bigint }, b: { tx: bigint; id: bigint }): number {
  if (a.tx !== b.tx) return a.tx < b.tx ? -1 : 1;
  return a.id === b.id ? 0 : a.id < b.id ? -1 : 1;
}

export interface Subscriber {
  /** What the subscriber follows; the fan-out only hands it matching events. */
  readonly filter: { queue?: string; jobId?: string };
  deliver(messages: StreamMessage[]): void;
}

/** Subscribers by what they follow: one job, one queue, or everything. */
class SubscriberIndex {
  readonly all = new Set<Subscriber>();
  readonly byJob = new Map<string, Set<Subscriber>>();
  readonly byQueue = new Map<string, Set<Subscriber>>();
  size = 0;

  private bucket(s: Subscriber): Set<Subscriber> {
    const { jobId, queue } = s.filter;
    const [map, key] = jobId !== undefined ? [this.byJob, jobId] : queue !== undefined ? [this.byQueue, queue] : [null, ''];
    if (!map) return this.all;
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    return set;
  }

  add(s: Subscriber): void {
    const set = this.bucket(s);
    if (set.has(s)) return;
    set.add(s);
    this.size++;
  }

  delete(s: Subscriber): void {
    const { jobId, queue } = s.filter;
    const set = this.bucket(s);
    if (!set.delete(s)) return;
    this.size--;
    if (set.size === 0 && set !== this.all) (jobId !== undefined ? this.byJob : this.byQueue).delete(jobId ?? queue!);
  }

  clear(): void {
    this.all.clear();
    this.byJob.clear();
    this.byQueue.clear();
    this.size = 0;
  }
}

/** Groups messages by a key, keeping feed order within each group. */
function groupBy(messages: StreamMessage[], key: (m: StreamMessage) => string, wanted: Map<string, unknown>): Map<string, StreamMessage[]> {
  const groups = new Map<string, StreamMessage[]>();
  for (const m of messages) {
    const k = key(m);
    if (!wanted.has(k)) continue;
    const g = groups.get(k);
    if (g) g.push(m);
    else groups.set(k, [m]);
  }
  return groups;
}

export const TERMINAL: ReadonlySet<JobStatus> = new Set(['succeeded', 'failed', 'cancelled']);

export class Fanout {
  private readonly subscribers = new SubscriberIndex();
  private readonly watchers = new Map<string, Set<(e: JobEvent) => void>>();
  private readonly observers: ((events: JobEvent[]) => void)[] = [];
  private readonly listenHooks: (() => void)[] = [];

  /**
   * `onError`: an observer or `?wait` watcher that throws is reported here. The tailer has moved
   * its position by the time it publishes, so a throw that left publish() would lose the page for
   * every stream: none may.
   */
  constructor(private readonly onError: (err: unknown) => void = () => {}) {}

  get size(): number {
    return this.subscribers.size;
  }

  /** A stream or a `?wait` follows events as they come (observers alone do not: they can wait). */
  get listening(): boolean {
    return this.subscribers.size > 0 || this.watchers.size > 0;
  }

  /** Calls fn when the first stream or `?wait` starts to follow events. */
  onListening(fn: () => void): void {
    this.listenHooks.push(fn);
  }

  private startedListening(was: boolean): void {
    if (!was) for (const fn of this.listenHooks) fn();
  }

  /** Adds a stream subscriber; returns its unsubscribe. */
  subscribe(s: Subscriber): () => void {
    const was = this.listening;
    this.subscribers.add(s);
    this.startedListening(was);
    return () => this.subscribers.delete(s);
  }

  /** Calls fn for every event of one job (for `?wait`); returns the unsubscribe. */
  watchJob(jobId: string, fn: (e: JobEvent) => void): () => void {
    const was = this.listening;
    let set = this.watchers.get(jobId);
    if (!set) this.watchers.set(jobId, (set = new Set()));
    set.add(fn);
    this.startedListening(was);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.watchers.get(jobId) === set) this.watchers.delete(jobId);
    };
  }

  /** Sees every published page (metrics). */
  observe(fn: (events: JobEvent[]) => void): void {
    this.observers.push(fn);
  }

  private guarded<T>(fn: (arg: T) => void, arg: T): void {
    try {
      fn(arg);
    } catch (err) {
      this.onError(err);
    }
  }

  /** One stream's failure (a closed socket's write, say) is its own, not the next stream's. */
  private send(s: Subscriber, messages: StreamMessage[]): void {
    try {
      s.deliver(messages);
    } catch (err) {
      this.onError(err);
    }
  }

  /** Called by the tailer, in feed order, synchronously: a subscriber added between two calls misses nothing. */
  publish(events: JobEvent[]): void {
    if (events.length === 0) return;
    for (const fn of this.observers) this.guarded(fn, events);
    if (this.watchers.size > 0) {
      for (const e of events) {
        const set = this.watchers.get(e.jobId);
        if (set) for (const fn of [...set]) this.guarded(fn, e);
      }
    }
    const subs = this.subscribers;
    if (subs.size === 0) return;
    const messages = events.map(toMessage);
    for (const s of subs.all) this.send(s, messages);
    // Filtered subscribers see only their own events, and are not called when there are none.
    if (subs.byQueue.size > 0) {
      for (const [queue, group] of groupBy(messages, (m) => m.event.queue, subs.byQueue)) {
        for (const s of subs.byQueue.get(queue)!) this.send(s, group);
      }
    }
    if (subs.byJob.size > 0) {
      for (const [jobId, group] of groupBy(messages, (m) => m.event.jobId, subs.byJob)) {
        for (const s of subs.byJob.get(jobId)!) this.send(s, group);
      }
    }
  }

  /** Ends every subscriber (server shutdown). */
  clear(): void {
    this.subscribers.clear();
    this.watchers.clear();
  }
}
