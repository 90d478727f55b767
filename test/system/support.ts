// Helpers for the system suite: herald processes and a resilient SSE recorder (waiting: test/support/wait.ts).
import { createParser } from 'eventsource-parser';
import { spawnHerald, type HeraldProcess } from '../support/herald-process.ts';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A spawned `herald server` once it listens, with its base URL. */
export async function serverListening(proc: HeraldProcess): Promise<{ proc: HeraldProcess; url: string }> {
  const line = await proc.waitFor((l) => typeof l.url === 'string' || /listening at http/i.test(String(l.msg ?? '')), 90_000);
  const url = typeof line.url === 'string' ? line.url : /(http:\/\/[^\s]+)/.exec(String(line.msg))![1];
  return { proc, url: url.replace(/\/$/, '') };
}

/** `herald server` on a free port; resolves once it listens, with its base URL. One that never does is killed. */
export async function startServer(env: Record<string, string | undefined>): Promise<{ proc: HeraldProcess; url: string }> {
  const proc = spawnHerald(['server'], { PORT: '0', ...env });
  try {
    return await serverListening(proc);
  } catch (err) {
    await proc.dispose();
    throw err;
  }
}

export interface StreamEvent {
  id: string;
  eventId: string;
  jobId: string;
  type: string;
  status: string;
  attempt: number;
}

/**
 * An SSE client that never gives up: whenever its connection dies it reconnects with the last
 * id it saw as Last-Event-ID, as a browser's EventSource does.
 */
export class StreamRecorder {
  readonly events: StreamEvent[] = [];
  reconnects = 0;
  private lastId: string;
  private stopped = false;
  private abort?: AbortController;
  private done: Promise<void>;

  constructor(private readonly baseUrl: () => string, opts: { from?: string; query?: string; token?: string } = {}) {
    this.lastId = opts.from ?? '0';
    this.done = this.run(opts.query ?? '', opts.token);
  }

  private async run(query: string, token?: string): Promise<void> {
    while (!this.stopped) {
      this.abort = new AbortController();
      try {
        const res = await fetch(`${this.baseUrl()}/api/events${query ? `?${query}` : ''}`, {
          headers: { 'last-event-id': this.lastId, accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
          signal: this.abort.signal,
        });
        if (res.ok && res.body) {
          const parser = createParser({
            onEvent: (m) => {
              if (m.event !== 'job' || !m.id) return;
              this.events.push({ id: m.id, ...JSON.parse(m.data) });
              this.lastId = m.id;
            },
          });
          const decoder = new TextDecoder();
          for await (const chunk of res.body) parser.feed(decoder.decode(chunk, { stream: true }));
        }
      } catch {
        // dropped: reconnect below
      }
      if (this.stopped) break;
      this.reconnects++;
      await sleep(100);
    }
  }

  /** Drops the current connection; the recorder reconnects with Last-Event-ID. */
  drop(): void {
    this.abort?.abort();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    await this.done;
  }
}
