// The event stream of Herald's HTTP API as an async iterator, and the API's error reply. It resumes
// by itself with Last-Event-ID after a dropped connection, so a consumer sees every event exactly once.
// Apart from index.ts so that the client stays readable; index.ts re-exports all of it.
import { createParser } from 'eventsource-parser';
import type { JobEvent } from '../queue/job.ts';
import type { ErrorCode } from '../queue/errors.ts';

/** A job event as the API shows it. */
export type ApiJobEvent = Omit<JobEvent, 'cursor'>;
/** A message of the event stream: the event, and `id`, its opaque cursor. */
export type StreamEvent = ApiJobEvent & { id: string };

export interface StreamOptions {
  queue?: string;
  job?: string;
  flow?: string;
  /** Start after this cursor ("0": from the beginning). Unset: live from now. */
  lastEventId?: string;
  signal?: AbortSignal;
  /**
   * `event: reset`: retention removed events this stream had not received (through
   * `removedThrough`), so whatever was built from the stream may be stale: reload it; the stream
   * goes on either way. Called once per removal: not again for a reconnect told of the same one,
   * nor for one made before a live stream began (the server names it when the stream starts).
   */
  onReset?: (removedThrough: string) => void;
}

/** An error reply of the API: Fastify's {statusCode, error, message}, and its stable `code` (README, "Error codes"). */
export class HeraldApiError extends Error {
  override name = 'HeraldApiError';
  constructor(
    readonly statusCode: number,
    message: string,
    readonly error: string = '',
    /** Undefined when the reply was not Herald's (a proxy's error page, say). */
    readonly code?: ErrorCode,
  ) {
    super(message);
  }
}

export async function apiError(res: Response): Promise<HeraldApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: unknown; code?: ErrorCode } | null;
    if (body && typeof body.message === 'string') {
      return new HeraldApiError(res.status, body.message, typeof body.error === 'string' ? body.error : '', body.code);
    }
  } catch {
    // not JSON: fall through
  }
  return new HeraldApiError(res.status, text.slice(0, 200) || res.statusText || `HTTP ${res.status}`);
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });

export class EventStream implements AsyncIterable<StreamEvent> {
  /** The cursor of the last event handed out (or where a live stream began). */
  lastEventId: string | undefined;
  /** Connections made after the first, since this stream began. */
  reconnects = 0;
  /** The newest removal this stream knows of: named when it started live, or by an `event: reset`. */
  removedThrough: string | undefined;
  private readonly abort = new AbortController();
  private connection?: AbortController;
  /** The current connection was dropped by reconnect(), not by a failure. */
  private dropped = false;

  constructor(
    private readonly fetchFn: typeof fetch,
    private readonly baseUrl: string,
    private readonly headers: Record<string, string>,
    private readonly opts: StreamOptions,
  ) {
    this.lastEventId = opts.lastEventId;
    opts.signal?.addEventListener('abort', () => this.close(), { once: true });
  }

  /** Ends the stream; a pending `next()` finishes. */
  close(): void {
    this.abort.abort();
  }

  /** Drops the current connection only; the stream resumes after it (for tests and failover). */
  reconnect(): void {
    if (!this.connection || this.connection.signal.aborted) return;
    this.dropped = true;
    this.connection.abort();
  }

  private url(): string {
    const q = new URLSearchParams();
    if (this.opts.queue !== undefined) q.set('queue', this.opts.queue);
    if (this.opts.job !== undefined) q.set('job', this.opts.job);
    if (this.opts.flow !== undefined) q.set('flow', this.opts.flow);
    const qs = q.toString();
    return `${this.baseUrl}/api/events${qs ? `?${qs}` : ''}`;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    let failures = 0;
    let first = true;
    try {
      while (!this.abort.signal.aborted) {
        if (!first) this.reconnects++;
        first = false;
        if (failures > 0) await sleep(Math.min(5_000, 100 * 2 ** (failures - 1)), this.abort.signal);
        if (this.abort.signal.aborted) return;
        this.connection = new AbortController();
        this.dropped = false;
        const signal = AbortSignal.any([this.abort.signal, this.connection.signal]);
        let res: Response;
        try {
          const headers = this.lastEventId !== undefined ? { ...this.headers, 'last-event-id': this.lastEventId } : this.headers;
          res = await this.fetchFn(this.url(), { headers, signal });
        } catch {
          if (!this.dropped) failures++;
          continue;
        }
        if (!res.ok || !res.body) {
          const err = await apiError(res);
          if (res.status >= 400 && res.status < 500 && res.status !== 429) throw err;
          failures++;
          continue;
        }
        // A live stream starts at the server's head; resuming from there loses nothing. It is
        // also told what retention had removed by then: a reconnect from behind that is told of
        // the removal again, and it is none of this stream's loss.
        if (this.lastEventId === undefined) {
          this.lastEventId = res.headers.get('herald-cursor') ?? undefined;
          this.removedThrough = res.headers.get('herald-removed-through') ?? this.removedThrough;
        }
        const ready: (StreamEvent | { reset: string })[] = [];
        const parser = createParser({
          onEvent: (m) => {
            if (m.event === 'job' && m.id) ready.push({ ...(JSON.parse(m.data) as ApiJobEvent), id: m.id });
            else if (m.event === 'reset') ready.push({ reset: String((JSON.parse(m.data) as { removedThrough: unknown }).removedThrough) });
          },
        });
        const decoder = new TextDecoder();
        // A reader rather than for-await: leaving the loop early must not wait for the body to cancel.
        const reader = res.body.getReader();
        let got = false;
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            parser.feed(decoder.decode(value, { stream: true }));
            while (ready.length > 0) {
              const event = ready.shift()!;
              if ('reset' in event) {
                // Retention's horizon only moves forward, so a reset never names an older one than
                // the stream knows, and the same cursor again is the same removal (cursors stay
                // opaque to clients: no need to order them).
                if (event.reset === this.removedThrough) continue;
                this.removedThrough = event.reset;
                this.opts.onReset?.(event.reset);
                continue;
              }
              got = true;
              this.lastEventId = event.id;
              yield event;
            }
          }
        } catch {
          // The connection dropped (or was dropped on purpose): resume below.
        } finally {
          this.connection.abort();
          reader.cancel().catch(() => {});
        }
        failures = got || this.dropped ? 0 : failures + 1;
      }
    } finally {
      this.connection?.abort();
    }
  }
}
