// The board's live store: the one place that owns the stream.
//
//   EventSource (or FetchSource) ──► StreamClient (cursor, reconnect with backoff; each message's data kept as is)
//               ──► EventBatcher (one flush per animation frame: parseEvent and RecentIds, which
//                   drops duplicates, for at most FRAME_BUDGET_MS; the rest waits a frame)
//               ──► #applyBatch: live job index → queue counts, rates/latency series,
//                   recent-events feed, then every view's onBatch listener (jobs table, job
//                   detail, workers) in the same frame, so Svelte renders once per frame.
//
// Queue counts are moved by status transitions as events come in (the index knows each job's
// previous bucket) and re-fetched from /api/queues at most once a second while events arrive,
// which corrects what events cannot tell (a scheduled job becoming due, a job we never saw).
// The pure parts live in live/, one module per concern, each unit-tested beside it.

import { api, HeraldApiError, recentEvents } from './client';
import { auth } from './auth.svelte';
import { EventBatcher, frameScheduler } from './live/event-batcher';
import { FetchSource } from './live/fetch-source';
import { applyTransitions, LiveIndex, sortQueues, type Transition } from './live/queue-counts';
import { RateSeries } from './live/rate-series';
import { RecentIds } from './live/recent-ids';
import { parseEvent, StreamClient } from './live/stream-client';
import { throttle } from './throttle';
import type { BoardJob, BoardEvent, QueueCounts, StreamState } from './types';

type BatchListener = (batch: BoardEvent[]) => void;

const RECENT = 40;
/**
 * How long a frame's flush may parse: a backlog after a stall is spread over frames, not parsed in
 * one long task. Half a 60 Hz frame leaves the rest to applying the events and rendering.
 */
const FRAME_BUDGET_MS = 8;

/**
 * The stream's reader: a FetchSource, which hands a burst of messages to the page a slice at a
 * time, where an EventSource dispatches a whole network read in one task and freezes the page
 * (see fetch-source.ts). localStorage herald.streamReader=eventsource picks the browser's own, to
 * compare the two (npm run bench -- --board).
 */
function openSource(url: string) {
  const reader = typeof localStorage === 'undefined' ? null : localStorage.getItem('herald.streamReader');
  return reader === 'eventsource' ? new EventSource(url) : new FetchSource(url);
}

class BoardStore {
  /** connecting → live → reconnecting → live …; shown in the header. */
  streamState = $state<StreamState>('connecting');
  /** The last `id:` cursor received (what a reconnect resumes from). */
  lastEventId = $state<string | null>(null);
  /** Events applied since the page loaded. */
  eventCount = $state(0);
  queues = $state<QueueCounts[]>([]);
  queuesLoaded = $state(false);
  queuesError = $state<unknown>(null);
  /** The newest events, newest first (raw state: replaced whole, at most 4 times a second). */
  recent = $state.raw<BoardEvent[]>([]);
  /** Bumps when the stream (re)opened without a cursor, so events may have been missed: views reload. */
  resyncs = $state(0);
  /** The rate series holds the stored history of the minutes before the page opened. */
  historyLoaded = $state(false);

  readonly index = new LiveIndex();
  readonly rates = new RateSeries(300);
  #seen = new RecentIds();
  #listeners = new Set<BatchListener>();
  #batcher = new EventBatcher<unknown, BoardEvent>((b) => this.#applyBatch(b), frameScheduler, {
    prepare: (data) => {
      const ev = parseEvent(data);
      return ev && this.#seen.add(ev.eventId) ? ev : null;
    },
    // A hidden tab renders nothing and its timer fires seldom: it catches up in one go.
    budgetMs: () => (typeof document !== 'undefined' && document.hidden ? Infinity : FRAME_BUDGET_MS),
  });
  #client: StreamClient | null = null;
  /** When the page began to listen: the rate series before it come from stored history. */
  #openedAt = Date.now();
  #seeding = false;
  #recentSeeded = false;
  #recentBuf: BoardEvent[] = [];
  // The feed is for reading, not for animation: 4 updates a second are plenty.
  #publishRecent = throttle(() => (this.recent = this.#recentBuf), 250);

  /** Re-fetches /api/queues, at most once a second, always once after the last call. */
  refreshQueues = throttle(() => this.#loadQueues(), 1000);

  /** Opens the tab's single event stream. Idempotent. */
  start(): void {
    if (this.#client) return;
    this.#client = new StreamClient({
      url: '/api/events',
      createSource: openSource,
      getToken: () => auth.token,
      onState: (s) => (this.streamState = s),
      // Parsed in the frame's flush, not here: a burst of messages is one task of the browser's.
      onData: (data) => this.#batcher.push(data),
      onOpen: ({ resumed }) => {
        this.refreshQueues();
        // Without a cursor the stream starts at the server's head, so events between a view's
        // HTTP load and that head would be lost. That includes the first open: the views load
        // while the stream is still connecting. Reloading now closes the gap (overlap is merged).
        if (!resumed) this.resyncs += 1;
      },
      // Retention removed events after our cursor: what the views hold may be stale, reload them.
      onReset: () => {
        this.refreshQueues();
        this.resyncs += 1;
      },
      // A hard failure may be a 401 (EventSource cannot tell us the status): an ordinary call
      // will, and its 401 opens the token prompt.
      onHardFailure: () => this.refreshQueues(),
      canConnect: () => !auth.required,
    });
    this.#client.start();
    auth.onChange(() => this.#client?.restart());
    this.refreshQueues();
  }

  /** Called with every batch of events, once per frame. Returns the unsubscribe function. */
  onBatch(fn: BatchListener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Tells the index about jobs fetched over HTTP, so their next event moves the right count. */
  noteJobs(jobs: BoardJob[]): void {
    const now = Date.now();
    for (const j of jobs) this.index.seed(j, now);
  }

  async #loadQueues(): Promise<void> {
    try {
      const qs = await api.queues();
      this.queues = sortQueues(qs);
      this.queuesLoaded = true;
      this.queuesError = null;
      auth.accept(); // the list needs a viewer token: the one we sent is good
      void this.#seedRates(qs.map((q) => q.queue));
      void this.#seedRecent();
    } catch (e) {
      this.queuesError = e;
      if (e instanceof HeraldApiError && e.statusCode === 401) this.queuesLoaded = false;
    }
  }

  /**
   * Once: the last minutes of every queue from GET /api/queues/:queue/stats, so the rate tiles
   * and the 5-minute charts show what happened before the page opened, not zeros until events come.
   */
  async #seedRates(queues: string[]): Promise<void> {
    if (this.historyLoaded || this.#seeding) return;
    this.#seeding = true;
    try {
      const all = await Promise.all(queues.map((q) => api.queueStats(q, '1h')));
      for (const minutes of all) this.rates.seed(minutes.slice(-6), this.#openedAt);
      this.historyLoaded = true;
    } catch {
      // A later /api/queues success tries again (after a token is given, say).
    } finally {
      this.#seeding = false;
    }
  }

  /**
   * Once: the newest events the server published before the page opened, so the live feed is not
   * empty after a reload. Behind any that came live meanwhile, each event once.
   */
  async #seedRecent(): Promise<void> {
    if (this.#recentSeeded) return;
    this.#recentSeeded = true;
    try {
      const older = await recentEvents(RECENT);
      const have = new Set(this.#recentBuf.map((e) => e.eventId));
      this.#recentBuf = [...this.#recentBuf, ...older.filter((e) => !have.has(e.eventId))].slice(0, RECENT);
      this.#publishRecent();
    } catch {
      this.#recentSeeded = false; // a later /api/queues success tries again
    }
  }

  #applyBatch(batch: BoardEvent[]): void {
    const now = Date.now();
    const moves: Transition[] = [];
    for (const ev of batch) {
      moves.push(this.index.apply(ev, now));
      this.rates.add(ev, now);
    }
    applyTransitions(this.queues, moves);
    this.lastEventId = this.#client?.lastId ?? null;
    this.eventCount += batch.length;
    const newest = batch.slice(-RECENT).reverse(); // a copy: listeners get the batch in order
    this.#recentBuf = [...newest, ...this.#recentBuf].slice(0, RECENT);
    this.#publishRecent();

    for (const fn of this.#listeners) {
      try {
        fn(batch);
      } catch (e) {
        console.error('board: batch listener failed', e);
      }
    }
    this.refreshQueues();
  }
}

export const board = new BoardStore();
