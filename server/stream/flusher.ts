// Write coalescing for SSE sessions, with one timer for all of them.
//
// Each socket write costs a syscall here and a read (and a chunk to parse) on the client's side;
// with a thousand clients those dominate both ends (profiled: ~20 µs per writev on this machine).
// So the server keeps to a budget of writes per second: with N sessions, each session may write
// once per N / budget ms on average (1,000 sessions at 20,000 writes/s: 50 ms; 100 sessions:
// 5 ms; a handful: well under 1 ms). Each session has a small bucket of write credit that fills
// at that rate: while it has credit an event is written at once (no added delay for a stream
// that keeps within its share), and when it has none the events wait for the next shared flush
// and go out together in one write.
export interface Flushable {
  flush(): void;
  /** Write credit, kept by the Flusher: tokens, and when they were last topped up. */
  credit: { tokens: number; at: number };
}

const MAX_GAP_MS = 100;
/** Writes a session may make back to back after a quiet spell. */
const BURST = 2;

export class Flusher {
  private readonly dirty = new Set<Flushable>();
  private timer?: NodeJS.Timeout;

  /** `writesPerSecond` ≤ 0 turns coalescing off. */
  constructor(
    private readonly writesPerSecond: number,
    private readonly sessions: () => number,
  ) {}

  /** One session's share of the budget: the average gap between two of its writes, in ms. */
  gapMs(): number {
    if (this.writesPerSecond <= 0) return 0;
    return Math.min(MAX_GAP_MS, (this.sessions() * 1000) / this.writesPerSecond);
  }

  /** A session has something to send: now if it has credit, else at the next shared flush. */
  request(s: Flushable, now = Date.now()): void {
    const gap = this.gapMs();
    if (gap === 0) return s.flush();
    const c = s.credit;
    c.tokens = Math.min(BURST, c.tokens + (now - c.at) / gap);
    c.at = now;
    if (c.tokens >= 1) {
      c.tokens -= 1;
      return s.flush();
    }
    this.dirty.add(s);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flushAll(), gap);
      this.timer.unref();
    }
  }

  forget(s: Flushable): void {
    this.dirty.delete(s);
  }

  // A flush spends credit too (down to one write of debt), so a session that is always busy
  // writes about once per gap, here.
  private flushAll(): void {
    this.timer = undefined;
    const due = [...this.dirty];
    this.dirty.clear();
    for (const s of due) {
      s.credit.tokens = Math.max(-1, s.credit.tokens - 1);
      s.flush();
    }
  }

  stop(): void {
    clearTimeout(this.timer);
    this.dirty.clear();
  }
}
