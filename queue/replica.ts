// A read replica (HERALD_READ_URL): a streaming standby of DATABASE_URL that a server reads from
// while it is up and close enough (docs/replicas.md). This is the one place that decides where a
// read goes: `pool()` is the replica while it is usable, the primary otherwise, and a read that
// fails on the replica (down, or cancelled by a replay conflict) runs again on the primary.
//
// Lag is the age of the oldest WAL position the primary had written that the replica is not known
// to have replayed: positions are noted when written (the lag check each second, and every tailer
// read) and dropped once replayed. A replica that is down is not known to replay anything, so its
// lag grows too. Usable: reachable and at most maxLagMs behind; once past it, usable again when
// back under half of it (so one slow moment does not flip the reads to and fro).
import type pg from 'pg';
import { createPool } from './database.ts';
import { DEFAULTS } from './defaults.ts';
import type { Logger } from './log.ts';
import { primaryWalPosition, replicaReplayPosition } from './sql/replica.ts';
import { StatementRunner } from './sql/statement.ts';

export interface ReplicaOptions {
  /** HERALD_READ_MAX_LAG_MS. */
  maxLagMs?: number;
  /** How often the lag is measured (and a replica that was down is tried again). */
  checkMs?: number;
  poolSize?: number;
  logger?: Logger;
}

export interface ReplicaStatus {
  /** The last statement on the replica succeeded. */
  up: boolean;
  /** Age of the oldest write it has not replayed, in ms (0: caught up). */
  lagMs: number;
  maxLagMs: number;
  /** Where reads go now. */
  reading: 'replica' | 'primary';
  /** How long the lag has been over maxLagMs (0: it is not), as of the last check. */
  overLimitMs: number;
}

/** A pg_lsn ("16/B374D848") as a number that orders. */
function lsnValue(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

/** Most positions remembered while the replica is behind: the oldest (what lag is measured from) is always kept. */
const MAX_PENDING = 1_000;
/** The longest pause between two looks at the replica's replay while a read waits for it. */
const MAX_REPLAY_POLL_MS = 20;

export class ReadReplica {
  readonly pool: pg.Pool;
  readonly maxLagMs: number;
  private readonly checkMs: number;
  private readonly logger?: Logger;
  private readonly sql = new StatementRunner();
  private up = true;
  private behind = false;
  /** Written positions not known to be replayed, oldest first. */
  private pending: { lsn: bigint; at: number }[] = [];
  private replayed = 0n;
  private timer?: NodeJS.Timeout;
  private checking?: Promise<void>;
  /** Since when the lag has been over maxLagMs, as the checks saw it. */
  private overSince: number | null = null;
  /** Reads served by each side since start (routed reads and the tailer's). */
  readonly served = { replica: 0, primary: 0 };

  constructor(
    url: string,
    private readonly primary: pg.Pool,
    opts: ReplicaOptions = {},
  ) {
    this.maxLagMs = opts.maxLagMs ?? DEFAULTS.readMaxLagMs;
    this.checkMs = opts.checkMs ?? DEFAULTS.replicaCheckMs;
    this.logger = opts.logger;
    // A replica that stops answering (a host gone, not refusing) must not hold a read longer than
    // the lag it is allowed: the read then runs on the primary.
    this.pool = createPool(url, {
      max: opts.poolSize, logger: opts.logger, applicationName: 'herald:server:replica', connectTimeoutMs: Math.max(1_000, this.maxLagMs),
    });
  }

  /** Measures once (the first reads know where to go), then every checkMs. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.checkMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.checking;
    await this.pool.end();
  }

  get usable(): boolean {
    return this.up && !this.behind;
  }

  lagMs(now = Date.now()): number {
    return this.pending.length ? Math.max(0, now - this.pending[0].at) : 0;
  }

  status(): ReplicaStatus {
    const now = Date.now();
    return {
      up: this.up, lagMs: this.lagMs(now), maxLagMs: this.maxLagMs, reading: this.usable ? 'replica' : 'primary',
      overLimitMs: this.overSince === null ? 0 : now - this.overSince,
    };
  }

  /** Runs a read on the replica while it is usable, else (or when it fails there) on the primary. */
  async read<R>(run: (pool: pg.Pool) => Promise<R>): Promise<R> {
    if (this.usable) {
      try {
        const result = await run(this.pool);
        this.served.replica++;
        return result;
      } catch (err) {
        this.failed(err);
      }
    }
    this.served.primary++;
    return run(this.primary);
  }

  /**
   * Runs fn on one replica session once the replica has replayed `lsn`, waiting while it is within
   * maxLagMs of it (`wait` false: not at all). Undefined when it cannot (down, too far behind, or
   * fn failed there): the caller reads the primary. One session for the check and the read: a
   * restarted standby may come back having replayed less, and it ends every session it had.
   */
  async whenReplayed<R>(lsn: string, fn: (client: pg.PoolClient) => Promise<R>, wait = true): Promise<{ value: R } | undefined> {
    if (!this.usable) return undefined;
    const target = lsnValue(lsn);
    let client: pg.PoolClient | undefined;
    let broken: Error | undefined;
    try {
      client = await this.pool.connect();
      for (let pause = 0; ; pause = Math.min(MAX_REPLAY_POLL_MS, Math.max(1, pause * 2))) {
        if (pause) await new Promise((r) => setTimeout(r, pause));
        const replayed = await this.replayPosition(client);
        if (replayed >= target) break;
        if (!wait || this.lagMs() > this.maxLagMs) {
          if (wait) this.setBehind(true);
          return undefined;
        }
      }
      const value = await fn(client);
      this.served.replica++;
      return { value };
    } catch (err) {
      broken = err as Error;
      this.failed(err);
      return undefined;
    } finally {
      client?.release(broken);
    }
  }

  /** A position the primary wrote at this moment (a tailer read's, or the check's). */
  noteWritten(lsn: string, at = Date.now()): void {
    const value = lsnValue(lsn);
    if (value <= this.replayed) return;
    const last = this.pending[this.pending.length - 1];
    if (last && last.lsn >= value) return;
    this.pending.push({ lsn: value, at });
    // Keep the oldest (the lag) and the newest; drop from the middle.
    if (this.pending.length > MAX_PENDING) this.pending.splice(1, 1);
  }

  /** Measures the lag: the primary's position now, and how far the replica has replayed. */
  check(): Promise<void> {
    this.checking ??= (async () => {
      try {
        this.noteWritten((await this.sql.run(this.primary, primaryWalPosition, [])).rows[0].lsn);
      } catch {
        // The primary's outage is the pool's and the health route's to report.
      }
      try {
        await this.replayPosition(this.pool);
        this.setUp(true);
      } catch (err) {
        this.failed(err);
      }
      const lag = this.lagMs();
      this.overSince = lag > this.maxLagMs ? (this.overSince ?? Date.now()) : null;
      if (lag > this.maxLagMs) this.setBehind(true);
      else if (lag <= this.maxLagMs / 2) this.setBehind(false);
    })().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async replayPosition(db: pg.Pool | pg.PoolClient): Promise<bigint> {
    const value = lsnValue((await this.sql.run(db, replicaReplayPosition, [])).rows[0].lsn);
    if (value > this.replayed) this.replayed = value;
    let done = 0;
    while (done < this.pending.length && this.pending[done].lsn <= value) done++;
    if (done) this.pending.splice(0, done);
    return value;
  }

  /** A read that failed there runs on the primary; only a lost connection marks the replica down (a replay conflict does not). */
  private failed(err: unknown): void {
    if (!this.up || !lostConnection(err)) return;
    this.up = false;
    this.logger?.warn({ err: (err as Error).message }, 'read replica failed: reading the primary until it answers again');
  }

  private setUp(up: boolean): void {
    if (up === this.up) return;
    this.up = up;
    if (!this.behind) this.logger?.info('read replica answers again: reading it');
  }

  private setBehind(behind: boolean): void {
    if (behind === this.behind) return;
    this.behind = behind;
    if (behind) this.logger?.warn({ lagMs: this.lagMs(), maxLagMs: this.maxLagMs }, 'read replica is too far behind: reading the primary until it catches up');
    else if (this.up) this.logger?.info({ lagMs: this.lagMs() }, 'read replica caught up: reading it');
  }
}

/** No SQLSTATE (a socket error), a connection exception (08), or the server going away (57P01-57P05). */
function lostConnection(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || /^57P0[1-5]$/.test(code);
}
