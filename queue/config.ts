// Every setting Herald reads from the environment, in one place; the defaults are in defaults.ts.
import { DEFAULTS } from './defaults.ts';
import { LOG_FORMATS, type LogFormatSetting } from './log.ts';

function int(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

function oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

function bool(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === '1' || raw === 'true') return true;
  if (raw === '0' || raw === 'false') return false;
  throw new Error(`${name} must be 1, 0, true or false, got "${raw}"`);
}

function list(name: string): string[] | undefined {
  const raw = process.env[name];
  if (!raw) return undefined;
  return raw.split(',').map((s) => s.trim()).filter(Boolean);
}

/**
 * Every variable Herald reads, its default and what it means: `herald --help` lists them, and
 * test/environment.test.ts fails when the code reads one that is not here.
 */
export const ENVIRONMENT: [name: string, fallback: string | number | boolean, meaning: string][] = [
  ['DATABASE_URL', 'unset: embedded PostgreSQL', 'the database'],
  ['HERALD_DATA_DIR', DEFAULTS.dataDir, "the embedded PostgreSQL's data directory"],
  ['HOST', DEFAULTS.host, 'where the server listens (--host)'],
  ['PORT', DEFAULTS.port, 'the server port; 0 picks a free one (--port)'],
  ['HERALD_TOKENS', 'unset: no auth, loopback only', 'role:token or role:label:token, comma-separated (viewer, producer, admin)'],
  ['HERALD_CONCURRENCY', DEFAULTS.concurrency, 'job slots per worker (--concurrency)'],
  ['HERALD_QUEUES', 'all but dead-letter queues', 'queues a worker takes, comma-separated (--queues)'],
  ['HERALD_LOG_LEVEL', DEFAULTS.logLevel, 'pino level; debug shows every claim and completion'],
  ['HERALD_LOG_FORMAT', DEFAULTS.logFormat, 'pretty, json, or auto (pretty on a terminal)'],
  ['HERALD_LISTEN_URL', 'DATABASE_URL', 'a direct session for LISTEN when DATABASE_URL is a pooler'],
  ['HERALD_READ_URL', 'unset: the server reads DATABASE_URL', "a streaming replica for the server's stream and the board's reads"],
  ['HERALD_READ_MAX_LAG_MS', DEFAULTS.readMaxLagMs, 'past this lag (or down) the replica is not read'],
  ['HERALD_LEASE_MS', DEFAULTS.leaseMs, 'job lease, renewed every third of it'],
  ['HERALD_POLL_MS', DEFAULTS.pollMs, 'safety-net poll of an idle worker'],
  ['HERALD_BACKOFF_BASE_MS', DEFAULTS.backoffBaseMs, 'retry backoff base'],
  ['HERALD_BACKOFF_MAX_MS', DEFAULTS.backoffMaxMs, 'retry backoff cap'],
  ['HERALD_RETENTION_MS', DEFAULTS.retentionMs, 'finished jobs older than this are deleted (0 keeps them)'],
  ['HERALD_MAX_STREAMS', DEFAULTS.maxStreams, 'open event streams per server; past it 503 with Retry-After'],
  ['HERALD_STREAM_PROCESSES', DEFAULTS.streamProcesses, 'processes `herald server` runs on its port, to spread SSE fan-out over cores'],
  ['HERALD_SHUTDOWN_GRACE_MS', DEFAULTS.shutdownGraceMs, 'how long a stopping worker lets jobs finish'],
  ['HERALD_LOCK_LOSS_GRACE_MS', DEFAULTS.lockLossGraceMs, 'how long a worker whose listener was cut has to renew its leases'],
  ['HERALD_ASYNC_COMMIT', DEFAULTS.asyncCommit, "the worker's writes with synchronous_commit off: faster; a crash of PostgreSQL can lose the last outcomes"],
  ['OTEL_EXPORTER_OTLP_ENDPOINT', 'unset: no tracing', 'send traces over OTLP to this collector (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)'],
  ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'unset', 'the traces endpoint alone'],
  ['OTEL_EXPORTER_OTLP_PROTOCOL', 'http/protobuf', 'http/protobuf or http/json (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)'],
  ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'the traces protocol alone'],
  ['OTEL_SERVICE_NAME', 'herald', 'the service name on the traces'],
];



export interface HeraldConfig {
  databaseUrl?: string;
  listenUrl?: string;
  readUrl?: string;
  readMaxLagMs: number;
  dataDir: string;
  host: string;
  port: number;
  tokens?: string;
  logLevel: string;
  logFormat: LogFormatSetting;
  concurrency: number;
  queues?: string[];
  leaseMs: number;
  pollMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  retentionMs: number;
  shutdownGraceMs: number;
  lockLossGraceMs: number;
  asyncCommit: boolean;
  maxStreams: number;
  streamProcesses: number;
}

export function loadConfig(): HeraldConfig {
  return {
    databaseUrl: process.env.DATABASE_URL || undefined,
    listenUrl: process.env.HERALD_LISTEN_URL || process.env.DATABASE_URL || undefined,
    readUrl: process.env.HERALD_READ_URL || undefined,
    readMaxLagMs: int('HERALD_READ_MAX_LAG_MS', DEFAULTS.readMaxLagMs, 0),
    dataDir: process.env.HERALD_DATA_DIR || DEFAULTS.dataDir,
    host: process.env.HOST || DEFAULTS.host,
    port: int('PORT', DEFAULTS.port),
    // Set but blank is an error (server/auth.ts), never auth off.
    tokens: process.env.HERALD_TOKENS,
    logLevel: process.env.HERALD_LOG_LEVEL || DEFAULTS.logLevel,
    logFormat: oneOf('HERALD_LOG_FORMAT', LOG_FORMATS, DEFAULTS.logFormat),
    concurrency: int('HERALD_CONCURRENCY', DEFAULTS.concurrency, 1),
    queues: list('HERALD_QUEUES'),
    leaseMs: int('HERALD_LEASE_MS', DEFAULTS.leaseMs, 100),
    pollMs: int('HERALD_POLL_MS', DEFAULTS.pollMs, 10),
    backoffBaseMs: int('HERALD_BACKOFF_BASE_MS', DEFAULTS.backoffBaseMs, 1),
    backoffMaxMs: int('HERALD_BACKOFF_MAX_MS', DEFAULTS.backoffMaxMs, 1),
    retentionMs: int('HERALD_RETENTION_MS', DEFAULTS.retentionMs, 0),
    shutdownGraceMs: int('HERALD_SHUTDOWN_GRACE_MS', DEFAULTS.shutdownGraceMs, 0),
    lockLossGraceMs: int('HERALD_LOCK_LOSS_GRACE_MS', DEFAULTS.lockLossGraceMs, 100),
    asyncCommit: bool('HERALD_ASYNC_COMMIT', DEFAULTS.asyncCommit),
    maxStreams: int('HERALD_MAX_STREAMS', DEFAULTS.maxStreams, 1),
    streamProcesses: int('HERALD_STREAM_PROCESSES', DEFAULTS.streamProcesses, 1),
  };
}
