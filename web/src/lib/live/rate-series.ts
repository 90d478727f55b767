// Rates and latency, per second, over a sliding window, computed from the stream.
import type { BoardEvent, HistoryBucket } from '../types';

export interface SeriesData {
  x: number[]; // epoch seconds
  enqueued: number[];
  succeeded: number[];
  failed: number[];
  lagAvg: (number | null)[];
  lagMax: (number | null)[];
}

export class RateSeries {
  readonly window: number;
  #sec: Float64Array;
  #enq: Float64Array;
  #succ: Float64Array;
  #fail: Float64Array;
  #lagSum: Float64Array;
  #lagN: Float64Array;
  #lagMax: Float64Array;
  #latest = 0;

  constructor(windowSec = 300) {
    this.window = windowSec;
    this.#sec = new Float64Array(windowSec).fill(-1);
    this.#enq = new Float64Array(windowSec);
    this.#succ = new Float64Array(windowSec);
    this.#fail = new Float64Array(windowSec);
    this.#lagSum = new Float64Array(windowSec);
    this.#lagN = new Float64Array(windowSec);
    this.#lagMax = new Float64Array(windowSec);
  }

  /** Buckets by the event's own time, so a replay after a reconnect lands where it happened. */
  add(ev: BoardEvent, now = Date.now()): void {
    let t = Date.parse(ev.at);
    if (!Number.isFinite(t)) t = now;
    const sec = Math.floor(t / 1000);
    if (sec <= this.#latest - this.window) return; // older than the window
    if (sec > this.#latest) this.#latest = sec;
    const i = this.#slot(sec);
    switch (ev.type) {
      case 'enqueued':
        this.#enq[i] += 1;
        break;
      case 'succeeded':
        this.#succ[i] += 1;
        break;
      case 'failed':
        this.#fail[i] += 1;
        break;
      case 'claimed': {
        const lag = Number(ev.data?.lagMs);
        if (Number.isFinite(lag)) {
          this.#lagSum[i] += lag;
          this.#lagN[i] += 1;
          if (lag > this.#lagMax[i]) this.#lagMax[i] = lag;
        }
        break;
      }
      default:
        break; // the other types move no rate
    }
  }

  /**
   * Fills the seconds before `until` (ms, when the page began to listen) from the server's stored
   * per-minute history, so a page opened after a busy minute is not flat. Each minute's counts are
   * spread evenly over its seconds; its wait p50 and p95 stand for the average and the maximum
   * lag. Called once per queue: the counts add up.
   */
  seed(minutes: HistoryBucket[], until: number): void {
    const end = Math.floor(until / 1000);
    for (const m of minutes) {
      const start = Math.floor(Date.parse(m.at) / 1000);
      const stop = Math.min(start + 60, end);
      if (!Number.isFinite(start) || stop <= start) continue;
      const n = stop - start;
      for (let sec = Math.max(start, end - this.window, this.#latest - this.window + 1); sec < stop; sec++) {
        const i = this.#slot(sec);
        this.#enq[i] += m.enqueued / n;
        this.#succ[i] += m.succeeded / n;
        this.#fail[i] += m.failed / n;
        if (m.waitP50Ms !== null) {
          this.#lagSum[i] += m.waitP50Ms;
          this.#lagN[i] += 1;
          this.#lagMax[i] = Math.max(this.#lagMax[i], m.waitP95Ms ?? m.waitP50Ms);
        }
      }
    }
    if (end - 1 > this.#latest) this.#latest = end - 1;
  }

  #slot(sec: number): number {
    const i = ((sec % this.window) + this.window) % this.window;
    if (this.#sec[i] !== sec) {
      this.#sec[i] = sec;
      this.#enq[i] = this.#succ[i] = this.#fail[i] = 0;
      this.#lagSum[i] = this.#lagN[i] = this.#lagMax[i] = 0;
    }
    return i;
  }

  /** The window's complete seconds up to (not including) the current one. */
  data(now = Date.now()): SeriesData {
    const end = Math.max(Math.floor(now / 1000), this.#latest) - 1;
    const out: SeriesData = { x: [], enqueued: [], succeeded: [], failed: [], lagAvg: [], lagMax: [] };
    for (let sec = end - this.window + 1; sec <= end; sec++) {
      const i = ((sec % this.window) + this.window) % this.window;
      const live = this.#sec[i] === sec;
      out.x.push(sec);
      out.enqueued.push(live ? this.#enq[i] : 0);
      out.succeeded.push(live ? this.#succ[i] : 0);
      out.failed.push(live ? this.#fail[i] : 0);
      const n = live ? this.#lagN[i] : 0;
      out.lagAvg.push(n ? this.#lagSum[i] / n : null);
      out.lagMax.push(n ? this.#lagMax[i] : null);
    }
    return out;
  }

  /** Totals over the last `seconds` complete seconds (read in place: the tiles ask every frame). */
  totals(seconds: number, now = Date.now()) {
    const end = Math.max(Math.floor(now / 1000), this.#latest) - 1;
    let enqueued = 0, succeeded = 0, failed = 0, lagSum = 0, lagN = 0, lagMax: number | null = null;
    for (let sec = Math.max(end - seconds, end - this.window) + 1; sec <= end; sec++) {
      const i = ((sec % this.window) + this.window) % this.window;
      if (this.#sec[i] !== sec) continue;
      enqueued += this.#enq[i];
      succeeded += this.#succ[i];
      failed += this.#fail[i];
      if (this.#lagN[i]) {
        lagSum += this.#lagSum[i];
        lagN += this.#lagN[i];
        lagMax = Math.max(lagMax ?? 0, this.#lagMax[i]);
      }
    }
    return { enqueued, succeeded, failed, lagAvg: lagN ? lagSum / lagN : null, lagMax };
  }
}
