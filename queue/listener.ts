// One dedicated session per process for LISTEN and, for workers, the liveness lock.
//
// Why not pg-listen: it hides its client, and the liveness lock must live on this same
// session (Postgres drops a session lock the moment the process dies, so the reaper can requeue
// its jobs within about a second instead of waiting out the lease). So this holds
// one pg.Client, reconnects it with backoff, re-LISTENs, re-takes the lock, and says so.
import { EventEmitter } from 'node:events';
import { randomInt } from 'node:crypto';
import pg from 'pg';
import { FIRST_LIVENESS_KEY, LOCK_NAMESPACE } from './locks.ts';
import {
  CONNECT_TIMEOUT_MS,
  LISTENER_CHECK_MS,
  LISTENER_FAST_RETRIES,
  LISTENER_POLLING_RETRY_MAX_MS,
  LISTENER_RETRY_MAX_MS,
  LISTENER_RETRY_MS,
} from './defaults.ts';
import type { Logger } from './log.ts';

export type ListenerState = 'connecting' | 'up' | 'down' | 'polling';

interface ListenerOptions {
  url: string;
  channels: string[];
  /** Hold a session advisory lock that tells the reaper this process is alive. */
  liveness?: boolean;
  /** Where the round-trip probe is sent from (the query pool), to detect a transaction pooler. */
  probePool?: pg.Pool;
  applicationName?: string;
  logger?: Logger;
}

interface ListenerEvents {
  notification: [channel: string, payload: string];
  /** After every (re)connect: callers check for anything missed while down. */
  connected: [];
  state: [state: ListenerState];
  /** Internal: the pooler probe's NOTIFY came back on this session. */
  probe: [channel: string];
}

export class Listener extends EventEmitter<ListenerEvents> {
  state: ListenerState = 'connecting';
  /** The liveness key held right now, or null. Claims record it as the job's owner_lock. */
  lockKey: number | null = null;
  private client?: pg.Client;
  private closed = false;
  private retryTimer?: NodeJS.Timeout;
  private checkTimer?: NodeJS.Timeout;
  private wantedKey = randomInt(FIRST_LIVENESS_KEY, 2 ** 31 - 1);

  constructor(private readonly opts: ListenerOptions) {
    super();
  }

  /**
   * Connects once. Resolves false when LISTEN is impossible now: the caller polls meanwhile, and
   * the listener keeps trying in the background (one failure at boot must not make it for good).
   */
  async start(): Promise<boolean> {
    try {
      await this.connect();
    } catch (err) {
      this.setState('polling');
      this.opts.logger?.warn(
        { err: (err as Error).message },
        'cannot LISTEN (direct session unreachable, or a transaction pooler): polling, and trying again in the background. Set HERALD_LISTEN_URL to a direct PostgreSQL URL',
      );
      this.reconnect(1);
      return false;
    }
    return true;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.opts.url,
      application_name: this.opts.applicationName ?? 'herald:listener',
      keepAlive: true,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (n) => {
      if (n.channel.startsWith('herald_probe_')) this.emit('probe', n.channel);
      else this.emit('notification', n.channel, n.payload ?? '');
    });
    await client.connect();
    try {
      for (const ch of this.opts.channels) await client.query(`LISTEN ${pg.escapeIdentifier(ch)}`);
      if (this.opts.probePool) await this.probe(client, this.opts.probePool);
      if (this.opts.liveness) await this.takeLivenessLock(client);
    } catch (err) {
      await endQuietly(client);
      throw err;
    }
    // Closed while this attempt was under way: it must not outlive the listener.
    if (this.closed) {
      await endQuietly(client);
      return;
    }
    this.client = client;
    this.setState('up');
    // A cheap query now and then notices a silently dead connection (NAT, failover): one not
    // answered within the check's period drops it.
    this.checkTimer = setInterval(() => {
      client.query({ text: 'SELECT 1', query_timeout: LISTENER_CHECK_MS } as pg.QueryConfig).catch((err: Error) => this.lost(client, err));
    }, LISTENER_CHECK_MS);
    this.checkTimer.unref();
    this.emit('connected');
  }

  // A NOTIFY sent from another session must arrive here. Through a transaction pooler it does not.
  private async probe(client: pg.Client, pool: pg.Pool): Promise<void> {
    const channel = `herald_probe_${process.pid}_${randomInt(1e9)}`;
    await client.query(`LISTEN ${channel}`);
    const arrived = new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), 2_000);
      this.once('probe', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    await pool.query(`NOTIFY ${channel}`);
    const ok = await arrived;
    await client.query(`UNLISTEN ${channel}`);
    if (!ok) throw new Error('a NOTIFY sent through the query pool never reached the listener');
  }

  // Keep the same key across reconnects when possible: jobs claimed under it stay ours.
  private async takeLivenessLock(client: pg.Client): Promise<void> {
    for (let i = 0; i < 10; i++) {
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [LOCK_NAMESPACE, this.wantedKey]);
      if (rows[0].ok) {
        this.lockKey = this.wantedKey;
        return;
      }
      this.wantedKey = randomInt(FIRST_LIVENESS_KEY, 2 ** 31 - 1);
    }
    throw new Error('could not take a liveness lock');
  }

  private lost(client: pg.Client, err: Error): void {
    if (client !== this.client || this.closed) return;
    this.client = undefined;
    this.lockKey = null;
    clearInterval(this.checkTimer);
    void endQuietly(client);
    this.setState('down');
    this.opts.logger?.warn({ err: err.message }, 'listener connection lost; reconnecting');
    this.reconnect(1);
  }

  private reconnect(attempt: number): void {
    if (this.closed) return;
    const delay = this.state === 'polling' ? pollingRetryDelay(attempt) : reconnectDelay(attempt);
    this.retryTimer = setTimeout(() => void this.retry(attempt), delay);
  }

  private async retry(attempt: number): Promise<void> {
    try {
      const polling = this.state === 'polling';
      await this.connect();
      if (this.closed) return;
      this.opts.logger?.info({ attempt }, polling ? 'listener connected: polling no longer needed' : 'listener reconnected');
    } catch (err) {
      this.opts.logger?.debug({ err: (err as Error).message, attempt }, 'listener reconnect failed');
      this.reconnect(attempt + 1);
    }
  }

  private setState(state: ListenerState): void {
    if (this.state === state) return;
    this.state = state;
    this.emit('state', state);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.checkTimer);
    const client = this.client;
    this.client = undefined;
    this.lockKey = null;
    if (client) await endQuietly(client);
  }
}

/**
 * The wait before reconnect attempt `attempt` (1, 2, ...): short and even at first, so a blip
 * within the reaper's grace is over before the worker's jobs are taken; then doubling, up to a
 * cap, for a database that stays away.
 */
function reconnectDelay(attempt: number): number {
  if (attempt <= LISTENER_FAST_RETRIES) return LISTENER_RETRY_MS;
  return Math.min(LISTENER_RETRY_MAX_MS, LISTENER_RETRY_MS * 2 ** (attempt - LISTENER_FAST_RETRIES));
}

/** The wait before attempt `attempt` of a listener that has not connected since it started. */
function pollingRetryDelay(attempt: number): number {
  return Math.min(LISTENER_POLLING_RETRY_MAX_MS, LISTENER_RETRY_MS * 2 ** attempt);
}

/** Ends a session this listener no longer uses: its events (a late error, its end) are not ours any more. */
async function endQuietly(client: pg.Client): Promise<void> {
  client.removeAllListeners();
  client.on('error', () => {});
  await client.end().catch(() => {});
}
