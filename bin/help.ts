// What `herald --help` says after the commands: the environment each command reads (queue/config.ts)
// with its default (queue/defaults.ts), since most settings have no flag of their own.
import { DEFAULTS } from '../queue/defaults.ts';

const ENVIRONMENT: [name: string, fallback: string | number, meaning: string][] = [
  ['DATABASE_URL', 'unset: embedded PostgreSQL', 'the database'],
  ['HERALD_DATA_DIR', DEFAULTS.dataDir, "the embedded PostgreSQL's data directory"],
  ['HOST', DEFAULTS.host, 'where the server listens (--host)'],
  ['PORT', DEFAULTS.port, 'the server port; 0 picks a free one (--port)'],
  ['HERALD_TOKENS', 'unset: no auth, loopback only', 'role:token or role:label:token, comma-separated (viewer, producer, admin)'],
  ['HERALD_CONCURRENCY', DEFAULTS.concurrency, 'job slots per worker (--concurrency)'],
  ['HERALD_QUEUES', 'all', 'queues a worker takes, comma-separated (--queues)'],
  ['HERALD_LOG_LEVEL', DEFAULTS.logLevel, 'pino level; debug shows every claim and completion'],
  ['HERALD_LOG_FORMAT', DEFAULTS.logFormat, 'pretty, json, or auto (pretty on a terminal)'],
  ['HERALD_LISTEN_URL', 'DATABASE_URL', 'a direct session for LISTEN when DATABASE_URL is a pooler'],
  ['HERALD_LEASE_MS', DEFAULTS.leaseMs, 'job lease, renewed every third of it'],
  ['HERALD_POLL_MS', DEFAULTS.pollMs, 'safety-net poll of an idle worker'],
  ['HERALD_BACKOFF_BASE_MS', DEFAULTS.backoffBaseMs, 'retry backoff base'],
  ['HERALD_BACKOFF_MAX_MS', DEFAULTS.backoffMaxMs, 'retry backoff cap'],
  ['HERALD_RETENTION_MS', DEFAULTS.retentionMs, 'finished jobs older than this are deleted (0 keeps them)'],
  ['HERALD_MAX_STREAMS', DEFAULTS.maxStreams, 'open event streams per server; past it 503 with Retry-After'],
  ['HERALD_STREAM_PROCESSES', DEFAULTS.streamProcesses, 'processes `herald server` runs on its port, to spread SSE fan-out over cores'],
  ['HERALD_SHUTDOWN_GRACE_MS', DEFAULTS.shutdownGraceMs, 'how long a stopping worker lets jobs finish'],
];

export function environmentHelp(): string {
  const width = Math.max(...ENVIRONMENT.map(([n]) => n.length));
  const rows = ENVIRONMENT.map(([name, fallback, meaning]) => `  ${name.padEnd(width)}  ${meaning} (default: ${fallback})`);
  return ['', 'Environment (flags override it):', ...rows, '', 'Quick start: npm start, then open the board; see README.md.'].join('\n');
}
