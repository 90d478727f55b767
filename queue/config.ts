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

export interface HeraldConfig {
  databaseUrl?: string;
  listenUrl?: string;
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
  asyncCommit: boolean;
  maxStreams: number;
  streamProcesses: number;
}

export function loadConfig(): HeraldConfig {
  return {
    databaseUrl: process.env.DATABASE_URL || undefined,
    listenUrl: process.env.HERALD_LISTEN_URL || process.env.DATABASE_URL || undefined,
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
    asyncCommit: bool('HERALD_ASYNC_COMMIT', DEFAULTS.asyncCommit),
    maxStreams: int('HERALD_MAX_STREAMS', DEFAULTS.maxStreams, 1),
    streamProcesses: int('HERALD_STREAM_PROCESSES', DEFAULTS.streamProcesses, 1),
  };
}
