// `herald server`: the HTTP/SSE server. createServer wires the parts (pool, core, event hub,
// metrics, Fastify app); startServer also checks the exposure rule and listens.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import type pg from 'pg';
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { ReadReplica } from '../queue/replica.ts';
import { historyRollup } from '../queue/history-rollup.ts';
import { DEFAULTS } from '../queue/defaults.ts';
import { buildApp } from './app.ts';
import { isLoopback, parseTokens, type Tokens } from './auth.ts';
import { createMetrics } from './metrics.ts';
import { AlertWatch } from './alerts.ts';
import { EventHub } from './stream/hub.ts';
import type { SessionLimits } from './stream/session.ts';

export interface ServerOptions {
  databaseUrl: string;
  /** HERALD_READ_URL: a streaming replica the stream and the board's reads use (docs/replicas.md). */
  readUrl?: string;
  /** HERALD_READ_MAX_LAG_MS: past this lag (or down) the replica is not read. */
  readMaxLagMs?: number;
  /** Direct session for LISTEN (HERALD_LISTEN_URL); defaults to databaseUrl. */
  listenUrl?: string;
  host?: string;
  port?: number;
  /** HERALD_TOKENS: "role:token,role:token". Unset: no auth, loopback only. */
  tokens?: string;
  logger?: Logger;
  poolSize?: number;
  /** The tailer's safety-net read interval. */
  safetyMs?: number;
  /** The tailer's pause after a read that found events (default 5 ms). */
  busyGapMs?: number;
  /** SSE socket writes per second before they are coalesced (default 20,000; 0 = never coalesce). */
  sseWriteBudget?: number;
  /** Most open SSE streams (HERALD_MAX_STREAMS); past it 503 with Retry-After. */
  maxStreams?: number;
  /** Slow-client bounds per SSE connection. */
  streamLimits?: Partial<SessionLimits>;
  boardDir?: string;
  /** The SSE keep-alive comment interval (default 15 s). */
  heartbeatMs?: number;
  /** How often this server rolls up queue history (default 10 s; one process at a time does it). */
  historyEveryMs?: number;
  /** Log the "listening" line (default true); a child of a multi-process server leaves it to the primary. */
  announce?: boolean;
}

export interface HeraldServer {
  app: FastifyInstance;
  hub: EventHub;
  queue: Queue;
  pool: pg.Pool;
  /** The read replica (HERALD_READ_URL), when set. */
  replica?: ReadReplica;
  /** Closes the app, the stream and the pool. */
  stop(): Promise<void>;
}

export async function createServer(opts: ServerOptions): Promise<HeraldServer> {
  const logger = opts.logger ?? pino({ level: 'silent' });
  const tokens = parseTokens(opts.tokens);
  const pool = createPool(opts.databaseUrl, { max: opts.poolSize, logger, applicationName: 'herald:server' });
  const queue = new Queue(pool);
  const replica = opts.readUrl ? new ReadReplica(opts.readUrl, pool, { maxLagMs: opts.readMaxLagMs, poolSize: opts.poolSize, logger }) : undefined;
  const reads = replica ? new Queue(pool, { replica }) : queue;
  let hub: EventHub;
  try {
    await replica?.start();
    hub = await EventHub.start({
      queue,
      reads,
      listenUrl: opts.listenUrl ?? opts.databaseUrl,
      pool,
      logger,
      safetyMs: opts.safetyMs,
      busyGapMs: opts.busyGapMs,
      writeBudget: opts.sseWriteBudget,
      limits: opts.streamLimits,
      maxStreams: opts.maxStreams,
    });
  } catch (err) {
    await replica?.stop();
    await pool.end();
    throw err;
  }
  const closing = new AbortController();
  const alerts = new AlertWatch(queue, hub, replica);
  const app = await buildApp({
    queue,
    reads,
    replica,
    hub,
    metrics: createMetrics(queue, hub, alerts, replica),
    alerts,
    closing: closing.signal,
    tokens,
    logger,
    boardDir: opts.boardDir,
    heartbeatMs: opts.heartbeatMs,
    onClosing: () => {
      closing.abort();
      hub.closeSessions();
    },
  });
  // The board's history charts need rollups even where no worker runs.
  const history = historyRollup(queue, logger, opts.historyEveryMs);
  let stopped: Promise<void> | undefined;
  return {
    app,
    hub,
    queue,
    pool,
    replica,
    stop() {
      stopped ??= (async () => {
        await history.stop();
        await app.close();
        await hub.stop();
        await replica?.stop();
        await pool.end();
      })();
      return stopped;
    },
  };
}

/** What `herald server` and `herald start` run. Logs the URL it listens on (PORT=0 picks one) and its auth mode. */
export async function startServer(opts: ServerOptions): Promise<HeraldServer & { url: string }> {
  const host = opts.host ?? DEFAULTS.host;
  const tokens = parseTokens(opts.tokens);
  if (tokens.size === 0 && !isLoopback(host)) {
    throw new Error(
      `HOST=${host} would let anyone who can reach this machine enqueue, cancel and retry jobs, and HERALD_TOKENS is unset. ` +
        'Set HERALD_TOKENS (e.g. "admin:SECRET,viewer:OTHER") or listen on 127.0.0.1',
    );
  }
  const server = await createServer(opts);
  const wanted = opts.port ?? DEFAULTS.port;
  // Fastify logs "Server listening at" once per address; the one line below says it (and the URL) once.
  const log = server.app.log;
  server.app.log = log.child({}, { level: 'warn' });
  try {
    await server.app.listen({ host, port: wanted });
  } catch (err) {
    await server.stop();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`port ${wanted} on ${host} is already in use: set PORT to a free port (PORT=${wanted + 1}), or PORT=0 for any free port`, { cause: err });
    }
    throw err;
  } finally {
    server.app.log = log;
  }
  const { port } = server.app.server.address() as { port: number };
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (opts.announce !== false) announceListening(log, url, tokens);
  return { ...server, url };
}

/** The start's "listening" line and the auth mode; a multi-process server logs them once, from its primary. */
export function announceListening(log: FastifyBaseLogger, url: string, tokens: Tokens, processes = 1): void {
  if (processes > 1) log.info({ url, processes }, `Herald server listening on ${url} (${processes} processes)`);
  else log.info({ url }, `Herald server listening on ${url}`);
  log.info(tokens.describe());
}
