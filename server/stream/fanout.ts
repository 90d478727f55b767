// The in-memory fan-out: the tailer publishes each page of events once, and every SSE session,
// every `?wait` request and the metrics see it from here. Nothing in this file touches the
// database, so a thousand clients cost a thousand array pushes per event, not a thousand queries.
import type { JobEvent } from '../../queue/job.ts';
import type { JobStatus } from '../../queue/schema.ts';

/** One event ready to send: its `data:` JSON is built once, whatever the number of clients. */
export interface StreamMessage {
  event: JobEvent;
  /** The cursor as numbers, for the replay→live hand-over comparison. */
  tx: bigint;
  id: bigint;
  sse: { id: string; event: 'job'; data: string };
  bytes: number;
}

export function toMessage(e: JobEvent): StreamMessage {
  const { cursor, ...data } = e;
  const json = JSON.stringify(data);
  const dot = cursor.indexOf('.');
  return {
    event: e,
    tx: BigInt(cursor.slice(0, dot)),
    id: BigInt(cursor.slice(dot + 1)),
    sse: { id: cursor, event: 'job', data: json },
    bytes: json.length + cursor.length + 32,
  };
}

/** Orders two positions like the feed does: by (tx, id). */
export function compareMessage(a: { tx: bigint; id: bigint }, b: { tx: bigint; id: bigint }): number {
  if (a.tx !== b.tx) return a.tx < b.tx ? -1 : 1;
  return a.id === b.id ? 0 : a.id < b.id ? -1 : 1;
}

export interface Subscriber {
  deliver(messages: StreamMessage[]): void;
}

export const TERMINAL: ReadonlySet<JobStatus> = new Set(['succeeded', 'failed', 'cancelled']);

export class Fanout {
  private readonly subscribers = new Set<Subscriber>();
  private readonly watchers = new Map<string, Set<(e: JobEvent) => void>>();
  private readonly observers: ((events: JobEvent[]) => void)[] = [];

  get size(): number {
    return this.subscribers.size;
  }

  /** Adds a stream subscriber; returns its unsubscribe. */
  subscribe(s: Subscriber): () => void {
    this.subscribers.add(s);
    return () => this.subscribers.delete(s);
  }

  /** Calls fn for every event of one job (for `?wait`); returns the unsubscribe. */
  watchJob(jobId: string, fn: (e: JobEvent) => void): () => void {
    let set = this.watchers.get(jobId);
    if (!set) this.watchers.set(jobId, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.watchers.get(jobId) === set) this.watchers.delete(jobId);
    };
  }

  /** Sees every published page (metrics). */
  observe(fn: (events: JobEvent[]) => void): void {
    this.observers.push(fn);
  }

  /** Called by the tailer, in feed order, synchronously: a subscriber added between two calls misses nothing. */
  publish(events: JobEvent[]): void {
    if (events.length === 0) return;
    for (const fn of this.observers) fn(events);
    if (this.watchers.size > 0) {
      for (const e of events) {
        const set = this.watchers.get(e.jobId);
        if (set) for (const fn of [...set]) fn(e);
      }
    }
    if (this.subscribers.size === 0) return;
    const messages = events.map(toMessage);
    for (const s of this.subscribers) s.deliver(messages);
  }

  /** Ends every subscriber (server shutdown). */
  clear(): void {
    this.subscribers.clear();
    this.watchers.clear();
  }
}
