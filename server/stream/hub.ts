// The server's event stream, assembled: one Listener (LISTEN herald_events) wakes one Tailer,
// which publishes to one Fanout, which feeds every SSE session, `?wait` request and metric.
// Never a database connection or a LISTEN per client.
import type { FastifyReply } from 'fastify';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { FeedHolder, Queue } from '../../queue/queue.ts';
import { compareCursor, formatCursor, START, type Cursor } from '../../queue/cursor.ts';
import { DEFAULTS } from '../../queue/defaults.ts';
import { Listener } from '../../queue/listener.ts';
import { EVENTS_CHANNEL } from '../../queue/channels.ts';
import { Fanout } from './fanout.ts';
import { Tailer } from './tailer.ts';
import { DEFAULT_LIMITS, StreamSession, type SessionLimits, type StreamFilter } from './session.ts';
import { Flusher } from './flusher.ts';

/** A transaction open this long that holds the stream back is named (health, metrics, the board); shorter ones are ordinary traffic. */
const HOLDER_MIN_AGE_MS = 1_000;

/** Socket writes per second to SSE clients, all together (see flusher.ts). */
const DEFAULT_WRITE_BUDGET = 20_000;

export interface HubOptions {
  queue: Queue;
  /** Where the tailer and replays read: a Queue on the read replica (docs/replicas.md); `queue` without one. */
  reads?: Queue;
  /** A direct session for LISTEN (HERALD_LISTEN_URL). */
  listenUrl: string;
  /** The query pool, used to check that NOTIFY gets through (a transaction pooler drops it). */
  pool?: pg.Pool;
  logger?: Logger;
  safetyMs?: number;
  /** The tailer's pause after a read that found events (see tailer.ts). */
  busyGapMs?: number;
  /** Socket writes per second across all SSE clients before writes get coalesced (see flusher.ts). */
  writeBudget?: number;
  limits?: Partial<SessionLimits>;
  /** Most open streams (DEFAULTS.maxStreams). */
  maxStreams?: number;
}

export class EventHub {
  readonly fanout: Fanout;
  readonly tailer: Tailer;
  readonly listener: Listener;
  readonly sessions = new Set<StreamSession>();
  /** Streams waiting for the idle tailer to catch up before they subscribe (they count toward the cap). */
  private opening = 0;
  /** Sessions dropped for being too slow, since start. */
  droppedClients = 0;
  private readonly limits: SessionLimits;
  private readonly flusher: Flusher;

  private constructor(private readonly opts: HubOptions) {
    this.fanout = new Fanout((err) => opts.logger?.error({ err }, 'an event observer threw; every stream still got the page'));
    this.tailer = new Tailer(opts.reads ?? opts.queue, this.fanout, { safetyMs: opts.safetyMs, busyGapMs: opts.busyGapMs, logger: opts.logger });
    this.listener = new Listener({
      url: opts.listenUrl,
      channels: [EVENTS_CHANNEL],
      probePool: opts.pool,
      applicationName: 'herald:server',
      logger: opts.logger,
    });
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.flusher = new Flusher(opts.writeBudget ?? DEFAULT_WRITE_BUDGET, () => this.sessions.size);
  }

  static async start(opts: HubOptions): Promise<EventHub> {
    const hub = new EventHub(opts);
    await hub.tailer.start();
    hub.listener.on('notification', () => hub.tailer.wake(true));
    // After a reconnect, read at once: ticks sent while it was down are gone.
    hub.listener.on('connected', () => hub.tailer.wake());
    await hub.listener.start();
    return hub;
  }

  /**
   * Serves one SSE connection. Subscribing and reading the tailer's position happen in one
   * synchronous step, so the replay's end (`target`) and the first buffered live event meet exactly.
   */
  async open(reply: FastifyReply, filter: StreamFilter, after: Cursor | null): Promise<void> {
    // While no stream was open the tailer read only on its safety timer: bring it up to date
    // first, or this stream's buffer would start with everything since.
    if (!this.fanout.listening) {
      // Counted meanwhile, so that streams opening together cannot pass the cap.
      this.opening++;
      try {
        await this.tailer.caughtUp();
      } finally {
        this.opening--;
      }
      if (!reply.sse.isConnected) return;
    }
    const session = new StreamSession(reply, filter, this.limits, this.flusher, () => this.droppedClients++, this.opts.logger);
    const target = this.tailer.position;
    const unsubscribe = this.fanout.subscribe(session);
    this.sessions.add(session);
    reply.sse.onClose(() => {
      unsubscribe();
      this.sessions.delete(session);
      session.closedByPeer();
    });
    reply.sse.keepAlive();
    // Live only starts at the database's head, which may be a little ahead of the tailer:
    // events up to it are skipped when they come through. (Subscribed first, so none is missed.)
    // Never before target: the buffer holds only what the tailer publishes after it.
    let start = after;
    if (start === null) {
      const live = await this.opts.queue.liveStart().catch(() => null);
      const head = live?.head ?? target;
      start = compareCursor(head, target) > 0 ? head : target;
      // What retention had removed before this stream began (none: no header; unknown after a
      // failed read: none either, so a later reset is reported rather than hidden). A reconnect
      // from before it is told of that removal again, and a client that read this knows it lost
      // nothing there.
      if (live && compareCursor(live.removedThrough, START) > 0) reply.header('herald-removed-through', formatCursor(live.removedThrough));
    }
    // The stream's start position, for clients that read headers (EventSource gets it as an id).
    reply.header('herald-cursor', formatCursor(start));
    reply.sse.sendHeaders();
    reply.raw.flushHeaders();
    if (after === null) return session.startLive(start);
    try {
      // Retention removed events after this cursor: the client's picture is stale, whatever the
      // replay brings. It reloads (the board its snapshot), then the replay goes on as usual.
      const removed = await this.opts.queue.retentionHorizon();
      if (compareCursor(after, removed) < 0) session.reset(removed);
      await session.replay(this.opts.reads ?? this.opts.queue, after, target);
    } catch (err) {
      // The client resumes from what it got; ending the stream is all there is to do.
      this.opts.logger?.warn({ err: (err as Error).message }, 'SSE replay failed; ending the stream');
      session.close();
    }
  }

  /** Another stream would pass the cap (HERALD_MAX_STREAMS). */
  full(): boolean {
    return this.sessions.size + this.opening >= (this.opts.maxStreams ?? DEFAULTS.maxStreams);
  }

  lagMs(): number | null {
    return this.tailer.lagMs();
  }

  /**
   * The transaction of this database that holds the stream back (events committed after it wait
   * for it to end), when it has been open for HOLDER_MIN_AGE_MS or more; otherwise null.
   */
  async holder(): Promise<FeedHolder | null> {
    const h = await this.opts.queue.feedHolder(this.tailer.position);
    return h && (h.ageMs === null || h.ageMs >= HOLDER_MIN_AGE_MS) ? h : null;
  }

  /** Ends every stream (clients resume elsewhere, or here after a restart, with Last-Event-ID). */
  closeSessions(): void {
    for (const s of this.sessions) s.close();
    this.sessions.clear();
  }

  async stop(): Promise<void> {
    this.closeSessions();
    this.flusher.stop();
    this.fanout.clear();
    await this.tailer.stop();
    await this.listener.close();
  }
}
