// The stream connection. One source per tab (an EventSource, or a FetchSource). An EventSource
// reconnects by itself (sending Last-Event-ID) while it is CONNECTING; when a source gives up
// (CLOSED: the server answered with an error status; a FetchSource at any failure), we make a
// new one with backoff and `?lastEventId=` so nothing is missed.
import type { BoardEvent, StreamState } from '../types';
import { normalizeEvent } from './normalize-event';

/** What a source hands its listeners (an EventSource's MessageEvent has both). */
interface SourceMessage {
  readonly data: unknown;
  readonly lastEventId: string;
}

export interface SourceLike {
  readonly readyState: number; // 0 CONNECTING, 1 OPEN, 2 CLOSED
  onopen: ((ev: Event) => unknown) | null;
  onerror: ((ev: Event) => unknown) | null;
  addEventListener(type: string, fn: (ev: SourceMessage) => void): void;
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

/** A message's data as an event, or null when it is not one. */
export function parseEvent(data: unknown): BoardEvent | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(data));
    // Tolerate a server that JSON-encodes the already-encoded event (a string of JSON).
    if (typeof parsed === 'string') parsed = JSON.parse(parsed);
  } catch {
    return null;
  }
  return normalizeEvent(parsed);
}

export interface StreamClientOptions {
  url: string;
  createSource: (url: string) => SourceLike;
  getToken: () => string | null;
  onState: (state: StreamState) => void;
  onEvent?: (ev: BoardEvent) => void;
  /**
   * Instead of onEvent: each message's data as it came, for the caller to parse later with
   * parseEvent. A browser hands the page every message of a network read in one task, so what
   * runs per message decides how long that task is when thousands arrive together.
   */
  onData?: (data: unknown) => void;
  /** Called on every open. `resumed` is false when no cursor was known: the caller should reload. */
  onOpen?: (info: { first: boolean; resumed: boolean }) => void;
  /** Called on `event: reset`: retention removed events after the cursor, so the caller should reload. */
  onReset?: () => void;
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

    const onMessage = (m: SourceMessage) => {
      if (src !== this.#source) return;
      if (m.lastEventId) this.lastId = m.lastEventId;
      if (this.o.onData) return this.o.onData(m.data);
      const ev = parseEvent(m.data);
      if (ev) this.o.onEvent?.(ev);
    };
    src.addEventListener('job', onMessage);
    src.addEventListener('message', onMessage); // in case a server omits `event: job`
    src.addEventListener('reset', () => {
      if (src === this.#source) this.o.onReset?.();
    });

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
