export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

/** Nearest-rank percentile of an ascending-sorted, non-empty array. */
function nearestRank(sorted: readonly number[], p: number): number {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** p50/p95/p99 by the nearest-rank method (always an observed sample, no interpolation). */
export function percentiles(samples: readonly number[]): Percentiles {
  if (samples.length === 0) throw new Error('percentiles: no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: nearestRank(sorted, 50), p95: nearestRank(sorted, 95), p99: nearestRank(sorted, 99) };
}
