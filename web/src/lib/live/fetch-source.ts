// The event stream read with fetch instead of EventSource. EventSource hands a page every event
// of a network read in one task: when the stream comes in faster than the page keeps up (a busy
// machine, a burst after a stall), a read holds thousands of events and the page freezes for
// hundreds of ms while they are dispatched. Here they are dispatched a slice at a time, and the
// page gets the main thread back between slices.
//
// It stands in for EventSource behind StreamClient's SourceLike with one difference: it never
// reconnects by itself. Any failure, or the stream ending, leaves it CLOSED and calls onerror, and
// StreamClient then reconnects with its backoff and the cursor, as after EventSource gives up.
import { SseParser, type SseMessage } from './sse-parser';
import { CLOSED, CONNECTING, type SourceLike } from './stream-client';

const OPEN = 1;
/** Main-thread time one slice of dispatching may take before the page gets a turn. */
const SLICE_MS = 8;
/** A read that resolved this long after it was asked for ran in a task of its own. */
const NEW_TASK_MS = 4;

type Listener = (m: SseMessage) => void;

/** Lets the browser run what waits (input, rendering, timers), then resumes: a task boundary. */
function yieldToPage(): Promise<void> {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      resolve();
    };
    ch.port2.postMessage(null);
  });
}

export interface FetchSourceOptions {
  fetch?: typeof fetch;
  now?: () => number;
  yieldToPage?: () => Promise<void>;
  sliceMs?: number;
}

export class FetchSource implements SourceLike {
  readyState = CONNECTING;
  onopen: ((ev: Event) => unknown) | null = null;
  onerror: ((ev: Event) => unknown) | null = null;
  #listeners = new Map<string, Listener[]>();
  #abort = new AbortController();
  #now: () => number;
  #yield: () => Promise<void>;
  #sliceMs: number;

  constructor(url: string, o: FetchSourceOptions = {}) {
    this.#now = o.now ?? (() => performance.now());
    this.#yield = o.yieldToPage ?? yieldToPage;
    this.#sliceMs = o.sliceMs ?? SLICE_MS;
    void this.#run(url, o.fetch ?? fetch);
  }

  addEventListener(type: string, fn: Listener): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), fn]);
  }

  close(): void {
    this.readyState = CLOSED;
    this.#abort.abort();
  }

  async #run(url: string, fetchFn: typeof fetch): Promise<void> {
    try {
      const res = await fetchFn(url, { headers: { accept: 'text/event-stream' }, cache: 'no-store', signal: this.#abort.signal });
      if (!res.ok || !res.body || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        void res.body?.cancel();
        throw new Error(`the stream answered ${res.status}`);
      }
      if (this.readyState === CLOSED) return;
      this.readyState = OPEN;
      this.onopen?.(new Event('open'));
      await this.#read(res.body);
    } catch {
      // the failure itself is not the caller's business: onerror with CLOSED says what to do
    }
    if (this.readyState === CLOSED) return; // closed by the caller: no error to report
    this.readyState = CLOSED;
    this.#abort.abort();
    this.onerror?.(new Event('error'));
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser();
    let sliceStart = this.#now();
    for (;;) {
      const asked = this.#now();
      const { done, value } = await reader.read();
      if (this.readyState === CLOSED) return;
      if (done) return;
      if (this.#now() - asked > NEW_TASK_MS) sliceStart = this.#now();
      for (const m of parser.push(decoder.decode(value, { stream: true }))) {
        if (this.#now() - sliceStart > this.#sliceMs) {
          await this.#yield();
          if (this.readyState === CLOSED) return;
          sliceStart = this.#now();
        }
        for (const fn of this.#listeners.get(m.type) ?? []) fn(m);
      }
    }
  }
}
