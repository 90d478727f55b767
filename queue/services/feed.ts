// The gap-free event feed (see sql/feed.ts and sql/horizon.ts): what a server's tailer, replays
// and health read. It keeps the horizon's list of other databases' transactions, so only a
// process that streams events carries it. With a read replica (db.replica) the tailer's reads and
// the replays go there, below a position the primary names (sql/replica.ts); everything else here
// reads the primary.
import { START, type Cursor } from '../cursor.ts';
import { toEvent, type JobEvent } from '../job.ts';
import { readRetentionHorizon } from '../sql/cleanup.ts';
import { feedHead, feedLiveStart, readFeed, readFeedRecent, readFeedThrough } from '../sql/feed.ts';
import { feedBacklog, feedHolder } from '../sql/feed-backlog.ts';
import { otherDatabaseXids } from '../sql/horizon.ts';
import { feedBacklogBelow, primaryFeedPosition, primaryWalPosition, readFeedBelow } from '../sql/replica.ts';
import { passWakeBarriers } from '../sql/wake.ts';
import { EVENTS_CHANNEL, wakeTarget } from '../channels.ts';
import { DEFAULTS } from '../defaults.ts';
import type { Db } from './db.ts';
import type { Executor } from '../sql/statement.ts';

/** What is left past the cursor after a short page: nothing, events the feed can read now, or events held above the horizon. */
export type Backlog = 'none' | 'readable' | 'held';

/** The open transaction the event feed waits for (see sql/horizon.ts). */
export interface FeedHolder {
  /** Its transaction id. */
  xid: string;
  /** Its session; null for a prepared transaction, or a session that could not be named. */
  pid: number | null;
  applicationName: string | null;
  /** pg_stat_activity's state ('idle in transaction', 'active', ...), or 'prepared'. */
  state: string | null;
  /** A prepared transaction's name. */
  gid: string | null;
  transactionStart: string | null;
  queryStart: string | null;
  /** How long its transaction has been open (or prepared), in ms. */
  ageMs: number | null;
}

export class FeedService {
  /**
   * Transactions of other databases that were running when last looked up (full ids). The feed's
   * horizon skips them; a transaction's database never changes, so the list is safe however old.
   */
  private otherXids: string[] = [];

  /**
   * With a replica: the primary's horizon and WAL position at the tailer's last read (no horizon
   * before the first, at the head). Every event at or before the tailer's position is on a replica
   * that has replayed `lsn`.
   */
  private last?: { horizon: string | null; lsn: string };

  constructor(private readonly db: Db) {}

  /**
   * Looks up the running transactions of other databases (see sql/horizon.ts) for the horizon to
   * skip. Costs a read of pg_locks and pg_stat_activity: for when the feed is held back. True when
   * it found one the horizon did not skip yet.
   */
  async learnOtherDatabases(): Promise<boolean> {
    const xids = (await this.db.run(otherDatabaseXids, [], this.db.pool)).rows.map((r) => r.x);
    const known = new Set(this.otherXids);
    this.otherXids = xids;
    return xids.some((x) => !known.has(x));
  }

  /** Events after `after` and below the horizon, gap-free (see sql/feed.ts): the tailer's read. */
  async feed(after: Cursor = START, limit = 1000): Promise<JobEvent[]> {
    const replica = this.db.replica;
    if (!replica) {
      const { rows } = await this.db.run(readFeed, [after.tx, after.id, limit, this.otherXids]);
      return rows.map(toEvent);
    }
    // The primary names the horizon and the WAL position past which the replica holds every event
    // below it; the replica is read once it has replayed that far, the primary when it cannot be.
    // Both read below the same horizon, so a switch either way neither skips nor repeats an event.
    const position = (await this.db.run(primaryFeedPosition, [this.otherXids], this.db.pool)).rows[0];
    replica.noteWritten(position.lsn);
    const values = [after.tx, after.id, limit, position.horizon] as const;
    const { rows } = await this.replayedOrPrimary(position.lsn, (db) => this.db.run(readFeedBelow, values, db), true);
    this.last = position;
    return rows.map(toEvent);
  }

  /** Events in (after, through], optionally for one job or queue: a replay up to a position the feed reached. */
  async feedThrough(after: Cursor, through: Cursor, limit = 1000, filter: { jobId?: string; queue?: string; flowId?: string } = {}): Promise<JobEvent[]> {
    const values = [
      after.tx, after.id, through.tx, through.id, limit, filter.jobId ?? null, filter.queue ?? null, filter.flowId ?? null,
    ] as const;
    const { rows } = await this.upToTailer((db) => this.db.run(readFeedThrough, values, db));
    return rows.map(toEvent);
  }

  /**
   * A read of events at or before a position the tailer reached: on the replica only when it holds
   * everything up to there (see `last`), without waiting for it; else on the primary.
   */
  private upToTailer<R>(run: (db: Executor) => Promise<R>): Promise<R> {
    return this.db.replica && this.last ? this.replayedOrPrimary(this.last.lsn, run, false) : run(this.db.pool);
  }

  /**
   * After a herald_events notification, before the read it asks for: waits for the transactions
   * that committed alongside its sender and skipped their own (sql/wake.ts). False: gave up waiting.
   */
  async passEventsBarrier(): Promise<boolean> {
    const { rows } = await this.db.run(passWakeBarriers, [[wakeTarget(EVENTS_CHANNEL)], DEFAULTS.wakeBarrierTimeoutMs], this.db.pool);
    return rows[0].passed;
  }

  /** The newest `limit` events at or before `through` (a position the tailer reached), newest first. */
  async recent(through: Cursor, limit: number, queue: string | null = null): Promise<JobEvent[]> {
    const { rows } = await this.upToTailer((db) => this.db.run(readFeedRecent, [through.tx, through.id, limit, queue], db));
    return rows.map(toEvent);
  }

  /** What is left past `after` after a short page (see sql/feed-backlog.ts). */
  async backlog(after: Cursor): Promise<Backlog> {
    const horizon = this.last?.horizon;
    const { rows } =
      this.db.replica && horizon
        ? await this.replayedOrPrimary(this.last!.lsn, (db) => this.db.run(feedBacklogBelow, [after.tx, after.id, horizon], db), false)
        : await this.db.run(feedBacklog, [after.tx, after.id, this.otherXids], this.db.pool);
    const newest = rows[0];
    if (!newest?.past) return 'none';
    return newest.held ? 'held' : 'readable';
  }

  /** With a replica: `run` on it once it has replayed `lsn` (ReadReplica.whenReplayed), else on the primary. */
  private async replayedOrPrimary<R>(lsn: string, run: (db: Executor) => Promise<R>, wait: boolean): Promise<R> {
    const replica = this.db.replica!;
    const read = await replica.whenReplayed(lsn, run, wait);
    if (read) return read.value;
    replica.served.primary++;
    return run(this.db.pool);
  }

  /** The transaction that holds the feed back past `after`, and its session, or null when none does. */
  async feedHolder(after: Cursor): Promise<FeedHolder | null> {
    const { rows } = await this.db.run(feedHolder, [after.tx, after.id], this.db.pool);
    const r = rows[0];
    if (!r) return null;
    return {
      xid: r.xid,
      pid: r.pid ?? null,
      applicationName: r.application_name ?? null,
      state: r.state ?? null,
      gid: r.gid ?? null,
      transactionStart: r.xact_start?.toISOString() ?? null,
      queryStart: r.query_start?.toISOString() ?? null,
      ageMs: r.age_ms === null ? null : Math.max(0, Math.round(r.age_ms)),
    };
  }

  /** The highest position retention removed (START: none): a cursor below it may have missed events. */
  async retentionHorizon(): Promise<Cursor> {
    return (await this.db.run(readRetentionHorizon, [], this.db.pool)).rows[0] ?? START;
  }

  /** The newest feed position: where the tailer starts. */
  async head(): Promise<Cursor> {
    const { rows } = await this.db.run(feedHead, [], this.db.pool);
    // A replay up to the head reads the replica once it has replayed what the primary had then.
    if (this.db.replica) this.last = { horizon: null, lsn: (await this.db.run(primaryWalPosition, [], this.db.pool)).rows[0].lsn };
    return rows[0] ? { tx: rows[0].tx, id: rows[0].id } : START;
  }

  /**
   * Where a live-only stream starts (the head) and the retention horizon then (START: none), in
   * one read: the stream knows of every removal made before it began.
   */
  async liveStart(): Promise<{ head: Cursor; removedThrough: Cursor }> {
    const r = (await this.db.run(feedLiveStart, [], this.db.pool)).rows[0];
    return {
      head: r.tx !== null && r.id !== null ? { tx: r.tx, id: r.id } : START,
      removedThrough: r.removed_tx !== null && r.removed_id !== null ? { tx: r.removed_tx, id: r.removed_id } : START,
    };
  }
}
