// Housekeeping that workers (and, for the history, servers) run on timers: the reaper, the
// expiry pass, registry and rate-window pruning, retention and the queue-history rollup.
// Each pass is safe to run from many processes at once.
import { DEFAULTS } from '../defaults.ts';
import type { JobStatus } from '../schema/index.ts';
import { deleteFinishedJobs } from '../sql/cleanup.ts';
import { dropEmptyJobCounts, foldJobCounts } from '../sql/counts.ts';
import { expireJobs } from '../sql/expire.ts';
import { lockHistory, pruneHistory, recordDepth, rollupEvents } from '../sql/history.ts';
import { markOrphans, reapJobs } from '../sql/reap.ts';
import { pruneQueueStarts } from '../sql/settings.ts';
import type { Executor } from '../sql/statement.ts';
import { pruneDeadWorkers } from '../sql/workers.ts';
import type { Db } from './db.ts';

export class MaintainService {
  constructor(private readonly db: Db) {}

  /** Requeues (or fails) running jobs whose lease expired or whose owner died. One reaper at a time. */
  async reap(limit = 1000): Promise<{ requeued: number; failed: number; cancelled: number; orphans: number }> {
    const { rows } = await this.db.run(reapJobs, [limit]);
    const count = (s: JobStatus) => rows.filter((r) => r.status === s).length;
    // Leases of jobs whose owner's liveness lock vanished now run out soon (see sql/reap.ts).
    const orphans = (await this.db.run(markOrphans, [limit])).rowCount;
    return { requeued: count('queued'), failed: count('failed'), cancelled: count('cancelled'), orphans };
  }

  /** Cancels queued jobs whose expireAt has passed (event 'expired'). Returns how many. */
  async expire(limit = 1000): Promise<number> {
    return (await this.db.run(expireJobs, [limit])).rowCount;
  }

  /** Drops rate-window records no window counts any more. */
  async pruneQueueStarts(): Promise<number> {
    return (await this.db.run(pruneQueueStarts, [])).rowCount;
  }

  /** Deletes registry rows of workers that died; returns their ids. */
  async pruneWorkers(): Promise<string[]> {
    return (await this.db.run(pruneDeadWorkers, [])).rows.map((r) => r.id);
  }

  /**
   * Deletes finished jobs older than `olderThanMs` with their events, and the events of jobs a
   * bulk delete removed that long ago, in batches. Returns the count of finished jobs deleted.
   */
  async cleanup(olderThanMs: number, batchSize = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const { jobs, gone } = (await this.db.run(deleteFinishedJobs, [olderThanMs, batchSize])).rows[0];
      total += jobs;
      if (jobs < batchSize && gone < batchSize) return total;
    }
  }

  /**
   * Folds the job counts' stripes into one row per queue, status and minute (see
   * queue/sql/counts.ts), and drops rows that count nothing. Returns how many rows it folded.
   */
  async foldCounts(c?: Executor): Promise<number> {
    const folded = (await this.db.run(foldJobCounts, [], c)).rows[0].folded;
    await this.db.run(dropEmptyJobCounts, [], c);
    return folded;
  }

  /**
   * Rolls new events up into per-minute queue history, folds the job counts, records each
   * queue's depth for this minute and drops history past 30 days. One process at a time: returns null at once when
   * another holds the rollup, else how many events it added. Each step is its own short
   * transaction (see rollupEvents): the event stream waits on any open transaction that has
   * written, so none of these may count a large table while holding one.
   */
  async rollupHistory(batchSize = 20_000): Promise<number | null> {
    const { db } = this;
    const locked = async <T>(fn: (c: Executor) => Promise<T>): Promise<T | null> =>
      db.transaction(async (c) => ((await db.run(lockHistory, [], c)).rows[0].locked ? fn(c) : null));
    let total = 0;
    for (;;) {
      const n = await locked(async (c) => (await db.run(rollupEvents, [batchSize], c)).rows[0].n);
      if (n === null) return total > 0 ? total : null;
      total += n;
      if (n < batchSize) break;
    }
    await locked((c) => this.foldCounts(c));
    await locked((c) => db.run(recordDepth, [], c));
    await locked((c) => db.run(pruneHistory, [DEFAULTS.historyRetentionMs], c));
    return total;
  }
}
