// Queue history as the API shows it: ranges, their bucket sizes, and percentiles read off the
// merged wait histograms that queue/sql/history.ts keeps per minute.

export const HISTORY_RANGES = {
  '1h': { spanMs: 3_600_000, bucketMs: 60_000 },
  '24h': { spanMs: 86_400_000, bucketMs: 900_000 },
  '7d': { spanMs: 604_800_000, bucketMs: 3_600_000 },
} as const;
export type HistoryRange = keyof typeof HISTORY_RANGES;

export interface HistoryBucket {
  at: string;
  enqueued: number;
  started: number;
  succeeded: number;
  failed: number;
  waitP50Ms: number | null;
  waitP95Ms: number | null;
  /** Queued jobs at the end of the bucket; null when no rollup ran in it. */
  depth: number | null;
}

/** The middle of histogram bin b, which holds waits w with floor(4 * log2(w + 1)) = b. */
const binMiddle = (b: number) => 2 ** ((b + 0.5) / 4) - 1;

/** The q-quantile (0..1) of a wait histogram, to the bin (about ±9%); null when empty. */
export function percentile(hist: number[], q: number): number | null {
  const total = hist.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let b = 0; b < hist.length; b++) {
    seen += hist[b];
    if (seen >= rank) return Math.round(binMiddle(b) * 10) / 10;
  }
  return null;
}

interface HistoryRow {
  at: Date;
  enqueued: number;
  started: number;
  succeeded: number;
  failed: number;
  hist: number[];
  depth: number | null;
}

/** Every bucket of the range up to now, the empty ones too, so a chart's time axis is even. */
export function toBuckets(rows: HistoryRow[], range: HistoryRange, now: number): HistoryBucket[] {
  const { spanMs, bucketMs } = HISTORY_RANGES[range];
  const byAt = new Map(rows.map((r) => [r.at.getTime(), r]));
  const last = Math.floor(now / bucketMs) * bucketMs;
  const out: HistoryBucket[] = [];
  for (let at = last - spanMs + bucketMs; at <= last; at += bucketMs) {
    const r = byAt.get(at);
    out.push({
      at: new Date(at).toISOString(),
      enqueued: r?.enqueued ?? 0,
      started: r?.started ?? 0,
      succeeded: r?.succeeded ?? 0,
      failed: r?.failed ?? 0,
      waitP50Ms: r ? percentile(r.hist, 0.5) : null,
      waitP95Ms: r ? percentile(r.hist, 0.95) : null,
      depth: r?.depth ?? null,
    });
  }
  return out;
}

/** Where a range's first bucket starts. */
export function rangeStart(range: HistoryRange, now: number): Date {
  const { spanMs, bucketMs } = HISTORY_RANGES[range];
  return new Date(Math.floor(now / bucketMs) * bucketMs - spanMs + bucketMs);
}
