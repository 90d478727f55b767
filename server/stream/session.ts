// One SSE client. It is subscribed to the fan-out before anything is read, so from that moment
// every live event lands in its bounded buffer.
//
// Replay → live hand-over: a resuming client first gets its replay from the database,
// (after, target] where target is the tailer's position at subscribe time; then the buffer
// drains, skipping anything not newer than what was sent (`skipThrough`). The buffer only holds
// events the tailer published after `target`, so there is no gap and no duplicate. The skip
// matters when the client's cursor is ahead of this tailer (it came from another server).
// A live-only client starts at the database head read after subscribing, with the same skip.
//
// Slow clients: the buffer is bounded (events and bytes). Past the bound the session is dropped
// and the connection ended; the client resumes with Last-Event-ID and loses nothing.
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { Queue } from '../../queue/queue.ts';
import { formatCursor, type Cursor } from '../../queue/cursor.ts';
import { compareMessage, toMessage, type StreamMessage, type Subscriber } from './fanout.ts';
import type { Flushable, Flusher } from './flusher.ts';

export interface StreamFilter {
  queue?: string;
  jobId?: string;
  /** Events of one flow; the fan-out hands such a session every event and it keeps its flow's. */
  flowId?: string;
}

export interface SessionLimits {
  /** Most events waiting for a slow client; keep it above the tailer's page (1000). */
  maxEvents: number;
  /** Most bytes waiting for a slow client. */
  maxBytes: number;
}

export const DEFAULT_LIMITS: SessionLimits = { maxEvents: 10_000, maxBytes: 8 * 1024 * 1024 };
const REPLAY_PAGE = 1000;
/** A dropped client that stops reading altogether is cut off after this. */
const END_GRACE_MS = 10_000;

type Position = { tx: bigint; id: bigint };
const toPosition = (c: Cursor): Position => ({ tx: BigInt(c.tx), id: BigInt(c.id) });
const noop = () => {};

export class StreamSession implements Subscriber, Flushable {
  /** Set when the buffer overflowed and the session was dropped. */
  dropped = false;
  closed = false;
  private pending: (StreamMessage | undefined)[] = [];
  private head = 0;
  private bytes = 0;
  private live = false;
  private waitingForDrain = false;
  /** During the hand-over: events at or before this were sent by the replay (or the client had them). */
  private skipThrough: Position | null = null;
  /** Write credit (see flusher.ts): a new stream may write at once. */
  credit = { tokens: 2, at: Date.now() };

  constructor(
    private readonly reply: FastifyReply,
    readonly filter: StreamFilter,
    private readonly limits: SessionLimits,
    private readonly flusher: Flusher,
    private readonly onDrop: (s: StreamSession) => void,
    private readonly log?: Logger,
  ) {}

  private matches(m: StreamMessage): boolean {
    const e = m.event;
    const f = this.filter;
    return (f.queue === undefined || e.queue === f.queue) && (f.jobId === undefined || e.jobId === f.jobId) && (f.flowId === undefined || e.flowId === f.flowId);
  }

  /** From the fan-out: buffer, then write as much as the socket takes. */
  deliver(messages: StreamMessage[]): void {
    if (this.closed) return;
    for (const m of messages) {
      if (!this.matches(m)) continue;
      this.pending.push(m);
      this.bytes += m.bytes;
    }
    if (this.live && this.pending.length > this.head) this.flusher.request(this);
    // What the socket would not take stays here; past the bound the client is too slow.
    if (this.pending.length - this.head > this.limits.maxEvents || this.bytes > this.limits.maxBytes) this.overflow();
  }

  /** Live only, from `position` on: tells the client where it starts (an `id:` with no data), then streams. */
  startLive(position: Cursor): void {
    this.skipThrough = toPosition(position);
    this.send({ id: formatCursor(position), data: undefined });
    this.live = true;
    this.pump();
  }

  /** Sends the stored events in (after, target], then hands over to the live buffer. */
  async replay(queue: Queue, after: Cursor, target: Cursor): Promise<void> {
    let from = after;
    let last = toPosition(after);
    for (;;) {
      // Everything up to target is final (the tailer read it below its horizon): read it all.
      const page = await queue.feedThrough(from, target, REPLAY_PAGE, this.filter);
      if (this.closed) return;
      const raw = this.reply.raw;
      // Write while the socket takes it, then wait for one 'drain': each write that meets a full
      // buffer makes the library wait on 'drain' too, so writing on would pile up a listener per event.
      for (let i = 0; i < page.length; ) {
        raw.cork();
        for (; i < page.length && !raw.writableNeedDrain; i++) {
          const m = toMessage(page[i]);
          raw.write(m.frame);
          last = m;
        }
        raw.uncork();
        await this.drained();
        if (this.closed || raw.destroyed) return;
      }
      if (page.length < REPLAY_PAGE) break;
      from = { tx: last.tx.toString(), id: last.id.toString() };
    }
    // `last` is the later of the client's cursor and the last replayed event; live events at or
    // before it are skipped (only possible when the client's cursor is ahead of this tailer).
    this.skipThrough = last;
    this.live = true;
    this.pump();
  }

  /** `event: reset`: events after the client's cursor were removed (retention); it should reload. */
  reset(horizon: Cursor): void {
    this.send({ event: 'reset', data: JSON.stringify({ removedThrough: formatCursor(horizon) }) });
  }

  /** A message of this session's own (the start position, a reset): the library frames it. Events are written pre-framed. */
  private send(message: { id?: string; event?: string; data: unknown }): void {
    // A closed socket rejects, which the 'close' handler already deals with.
    this.reply.sse.send(message).catch(noop);
  }

  private drained(): Promise<void> {
    const raw = this.reply.raw;
    if (!raw.writableNeedDrain || this.closed || raw.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        raw.off('drain', done);
        raw.off('close', done);
        resolve();
      };
      raw.on('drain', done);
      raw.on('close', done);
    });
  }

  flush(): void {
    this.pump();
  }

  /** Writes buffered events until the socket pushes back; resumes on 'drain'. */
  private pump(): void {
    if (this.closed || this.waitingForDrain) return;
    const raw = this.reply.raw;
    // Uncorking may hand everything to the socket at once and clear the back-pressure without a
    // 'drain' event (Node 22 and later do): write on until the socket really pushes back.
    do {
      raw.cork();
      while (this.head < this.pending.length && !raw.writableNeedDrain) {
        const m = this.pending[this.head]!;
        this.pending[this.head++] = undefined;
        this.bytes -= m.bytes;
        if (this.skipThrough) {
          if (compareMessage(m, this.skipThrough) <= 0) continue;
          this.skipThrough = null;
        }
        raw.write(m.frame);
      }
      raw.uncork();
    } while (this.head < this.pending.length && !raw.writableNeedDrain);
    if (this.head === this.pending.length) {
      this.pending = [];
      this.head = 0;
    } else {
      if (this.head > 1024) {
        this.pending = this.pending.slice(this.head);
        this.head = 0;
      }
      this.waitingForDrain = true;
      raw.once('drain', () => {
        this.waitingForDrain = false;
        this.pump();
      });
    }
  }

  private overflow(): void {
    this.dropped = true;
    this.log?.warn({ buffered: this.pending.length - this.head, bytes: this.bytes }, 'SSE client too slow: disconnecting it (it resumes with Last-Event-ID)');
    this.pending = [];
    this.head = 0;
    this.bytes = 0;
    this.onDrop(this);
    this.close(END_GRACE_MS);
  }

  /**
   * Ends the stream after what was written (shutdown, overflow) and hangs up: an ended SSE
   * response would otherwise leave an idle keep-alive socket that holds server.close() open.
   * A client that does not read what is left is cut off after `graceMs`.
   */
  close(graceMs = 2_000): void {
    if (this.closed) return;
    this.closed = true;
    this.flusher.forget(this);
    const raw = this.reply.raw;
    raw.once('finish', () => raw.socket?.end());
    setTimeout(() => raw.destroy(), graceMs).unref();
    this.reply.sse.close();
  }

  /** The connection went away. */
  closedByPeer(): void {
    this.closed = true;
    this.flusher.forget(this);
    this.pending = [];
    this.head = 0;
    this.bytes = 0;
  }
}
