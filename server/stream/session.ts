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
import type { Writable } from 'node:stream';
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
      const out = this.sink();
      // Write while the socket takes it, then wait for one 'drain' (a listener per write that
      // met a full buffer would pile up one per event).
      for (let i = 0; i < page.length; ) {
        out.to.cork();
        for (; i < page.length && !out.to.writableNeedDrain; i++) {
          const m = toMessage(page[i]);
          out.to.write(out.chunked ? m.chunk : m.frame);
          last = m;
        }
        out.to.uncork();
        await this.drained(out.to);
        if (this.closed || out.to.destroyed) return;
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

  /**
   * Where events go once the headers are out. The socket itself while this response owns it:
   * each event is then one write of the frame already framed as an HTTP chunk (or bare, for a
   * response that is not chunked), shared by every client, with none of the http layer's work
   * per write (its chunk header and trailer make every write a three-buffer writev). Otherwise
   * (no socket yet: a pipelined request waits its turn) the response, which frames and queues.
   * Anything the library writes itself (start id, reset, heartbeat) goes through the response to
   * the same socket, in call order.
   */
  private sink(): { to: Writable; chunked: boolean } {
    const raw = this.reply.raw;
    const socket = raw.socket;
    if (socket && raw.headersSent) return { to: socket, chunked: raw.chunkedEncoding };
    return { to: raw, chunked: false };
  }

  private drained(to: Writable): Promise<void> {
    if (!to.writableNeedDrain || this.closed || to.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        to.off('drain', done);
        to.off('close', done);
        resolve();
      };
      to.on('drain', done);
      to.on('close', done);
    });
  }

  flush(): void {
    this.pump();
  }

  /** Writes buffered events until the socket pushes back; resumes on 'drain'. */
  private pump(): void {
    if (this.closed || this.waitingForDrain) return;
    const { to, chunked } = this.sink();
    // Uncorking may hand everything to the socket at once and clear the back-pressure without a
    // 'drain' event (Node 22 and later do): write on until the socket really pushes back.
    do {
      // One event (the usual case live) is one plain write; several go out corked, as one writev.
      const corked = this.pending.length - this.head > 1;
      if (corked) to.cork();
      while (this.head < this.pending.length && !to.writableNeedDrain) {
        const m = this.pending[this.head]!;
        this.pending[this.head++] = undefined;
        this.bytes -= m.bytes;
        if (this.skipThrough) {
          if (compareMessage(m, this.skipThrough) <= 0) continue;
          this.skipThrough = null;
        }
        to.write(chunked ? m.chunk : m.frame);
      }
      if (corked) to.uncork();
    } while (this.head < this.pending.length && !to.writableNeedDrain);
    if (this.head === this.pending.length) {
      this.pending = [];
      this.head = 0;
    } else {
      if (this.head > 1024) {
        this.pending = this.pending.slice(this.head);
        this.head = 0;
      }
      this.waitingForDrain = true;
      to.once('drain', () => {
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
