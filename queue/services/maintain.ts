// Housekeeping that workers (and, for the history, servers) run on timers: the reaper, the
// expiry pass, registry and rate-window pruning, retention and the queue-history rollup.
// Each pass is safe to run from many processes at once.
import { DEFAULTS } from '../defaults.ts';
import type { JobStatus } from '../schema/index.ts';
import {
  addEventPartitions,
  deleteFinishedJobs,
  foldKeptPartition,
  nextXid,
  stageEventPartition,
  stageKeptEvents,
  stageValidate,
  swapEventPartition,
} from '../sql/cleanup.ts';
import { dropEmptyJobCounts, foldJobCounts } from '../sql/counts.ts';
import { expireJobs } from '../sql/expire.ts';
import { lockHistory, pruneHistory, recordDepth, rollupEvents } from '../sql/history.ts';
import { markOrphans, reapJobs } from '../sql/reap.ts';
import { pruneQueueStarts } from '../sql/settings.ts';
import type { Executor } from '../sql/statement.ts';
import { pruneDeadWorkers } from '../sql/workers.ts';
import type { Db } from './db.ts';

/** Width, lead, slack and lock wait of the event log's partitions (see DEFAULTS). */
export interface EventPartitionOptions {
  /** What retention keeps: a partition spans about DEFAULTS.eventPartitionsPerRetention-th of it. */
  retentionMs?: number;
  width?: bigint;
  lead?: bigint;
  slackXids?: number;
  lockMs?: number;
}

/** Events read per copy transaction, and how few kept events a drop copies under its lock (see DEFAULTS). */
export interface EventDropOptions {
  batch?: number;
  small?: number;
}

export class MaintainService {
  /** The last id and time prepareEventPartitions saw: the id rate that sizes the next partitions. */
  private lastXid?: { x: bigint; at: number };

  constructor(private readonly db: Db) {}

  /** Requeues (or fails) running jobs whose lease expired or whose owner died. One reaper at a time. */
  async reap(limit = 1000, graceMs: number = DEFAULTS.lockLossGraceMs): Promise<{ requeued: number; failed: number; cancelled: number; orphans: number }> {
    const { rows } = await this.db.run(reapJobs, [limit]);
    const count = (s: JobStatus) => rows.filter((r) => r.status === s).length;
    // Leases of jobs whose owner's liveness lock vanished now run out soon (see sql/reap.ts).
    const orphans = (await this.db.run(markOrphans, [limit, graceMs])).rowCount;
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
   * Deletes finished jobs older than `olderThanMs`, and the events of jobs a bulk delete removed
   * that long ago, in batches; then drops the event partitions past it (dropEventPartitions).
   * Returns the count of finished jobs deleted.
   */
  async cleanup(olderThanMs: number, batchSize = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const { jobs, gone } = (await this.db.run(deleteFinishedJobs, [olderThanMs, batchSize])).rows[0];
      total += jobs;
      if (jobs < batchSize && gone < batchSize) break;
    }
    await this.dropEventPartitions(olderThanMs);
    return total;
  }

  /**
   * Drops, oldest first, each event partition whose newest event is older than `olderThanMs`
   * and that the history rollup has read. The events of jobs that still exist are kept: copied
   * out first in short transactions of `batch` events read, so the drop itself locks the log only
   * for catalog work, or for copying `small` events or fewer (drizzle/0025_event_drop_staged.sql).
   * Then moves kept partitions thinned to `small` events into the default partition. Stops when a
   * lock was not had at once: the next pass retries. Returns how many partitions it dropped.
   */
  async dropEventPartitions(
    olderThanMs: number,
    lockMs: number = DEFAULTS.eventPartitionLockMs,
    { batch = DEFAULTS.eventDropBatch, small = DEFAULTS.eventDropSmall }: EventDropOptions = {},
  ): Promise<number> {
    const { db } = this;
    let dropped = 0;
    for (;;) {
      const [stage] = (await db.run(stageEventPartition, [olderThanMs, lockMs])).rows;
      if (!stage || !(await db.run(stageValidate, [lockMs])).rows[0].ok) break;
      let at: { tx: string | null; id: string | null } | undefined = stage;
      while (at?.tx != null && at.id != null) [at] = (await db.run(stageKeptEvents, [stage.part, at.tx, at.id, batch, lockMs])).rows;
      if (at) break; // busy: the next pass resumes
      if ((await db.run(swapEventPartition, [stage.part, olderThanMs, lockMs, small])).rows[0].r !== 1) break;
      dropped++;
    }
    while ((await db.run(foldKeptPartition, [lockMs, small])).rows[0].r === 1);
    return dropped;
  }

  /**
   * Keeps event partitions ready ahead of the transaction ids, one partition ahead, each sized to
   * span about an eighth of the retention period (DEFAULTS.eventPartitionsPerRetention, within an
   * hour and a day) at the id rate measured since the last call. Returns how many it added, or -1
   * when another maintainer had them or a lock was not had in time (the next pass retries; inserts
   * never wait for it: they go to the default partition).
   */
  async prepareEventPartitions(opts: EventPartitionOptions = {}): Promise<number> {
    const x = BigInt((await this.db.run(nextXid, [])).rows[0].x);
    const at = Date.now();
    const min = BigInt(DEFAULTS.eventPartitionXids);
    let width = opts.width ?? min;
    if (opts.width === undefined && this.lastXid && at > this.lastXid.at) {
      const share = (opts.retentionMs ?? DEFAULTS.retentionMs) / DEFAULTS.eventPartitionsPerRetention;
      const spanMs = Math.min(DEFAULTS.eventPartitionMaxSpanMs, Math.max(DEFAULTS.eventPartitionMinSpanMs, share));
      const perSpan = ((x - this.lastXid.x) * BigInt(Math.round(spanMs))) / BigInt(at - this.lastXid.at);
      if (perSpan > width) width = perSpan;
    }
    this.lastXid = { x, at };
    const { slackXids = DEFAULTS.eventPartitionSlackXids, lockMs = DEFAULTS.eventPartitionLockMs } = opts;
    const lead = opts.lead ?? width;
    return (await this.db.run(addEventPartitions, [String(width), String(lead), String(slackXids), lockMs])).rows[0].r;
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
