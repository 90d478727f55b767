// The `herald` commands (README, "Commands"). Each one reads its settings from the environment
// (queue/config.ts) and lets flags override them.
import fs from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { loadConfig, type HeraldConfig } from '../queue/config.ts';
import { openDatabase, createPool, type Database } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { createLogger, type Logger } from '../queue/log.ts';
import { Queue } from '../queue/queue.ts';
import { DEFAULTS } from '../queue/defaults.ts';
import { ProcessLife } from './process-life.ts';
import { startTracing } from './tracing.ts';
import { enqueueInputOf, integerOrText, type EnqueueOptions } from './enqueue-input.ts';
import { environmentHelp } from './help.ts';

const { version } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

const csv = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
const integer = (min: number, max = Number.MAX_SAFE_INTEGER) => (v: string) => {
  const n = Number(v);
  if (!/^\s*-?\d+\s*$/.test(v) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
  return n;
};
const positiveInt = integer(1);
const port = integer(0, 65_535);

/** What commander parses from `herald worker`'s options (`start` takes the first two). */
interface WorkerCliOptions {
  queues?: string[];
  concurrency?: number;
  tasks?: string;
  capabilities?: string[];
}

/** What commander parses from the options of `herald server` and `herald start`. */
interface ServerCliOptions {
  host?: string;
  port?: number;
}

/** `herald start` runs both. */
type StartOptions = ServerCliOptions & Pick<WorkerCliOptions, 'queues' | 'concurrency'>;

/** Adds the server's options; flags override HOST and PORT. */
const withServerOptions = (command: Command) =>
  command
    .option('--host <host>', `address to listen on; another than loopback needs HERALD_TOKENS (env HOST, default ${DEFAULTS.host})`)
    .option('--port <n>', `port to listen on, 0 for any free one (env PORT, default ${DEFAULTS.port})`, port);

/** A bad HERALD_TOKENS stops the command before it starts PostgreSQL (startServer checks it again). */
async function checkTokens(config: HeraldConfig): Promise<void> {
  const { parseTokens } = await import('../server/auth.ts');
  parseTokens(config.tokens);
}

async function boot(config: HeraldConfig, log: Logger, life: ProcessLife): Promise<Database> {
  const db = await openDatabase({ databaseUrl: config.databaseUrl, listenUrl: config.listenUrl, dataDir: config.dataDir, logger: log });
  life.started('database', () => db.close());
  // Migrations hold a session advisory lock: run them on the direct session, not a pooler.
  await migrate(db.listenUrl);
  return db;
}

async function main() {
  const config = loadConfig();
  const log = createLogger(config.logLevel, { stderr: process.argv[2] === 'enqueue', format: config.logFormat });
  const life = new ProcessLife(log);
  started = life;
  const program = new Command('herald')
    .description('Herald: a PostgreSQL job queue')
    .version(version, '-v, --version')
    .addHelpText('after', environmentHelp())
    .showHelpAfterError();

  program
    .command('migrate')
    .description('apply the migrations and exit')
    .action(async () => {
      await boot(config, log, life);
      log.info('migrations applied');
      await life.stop();
    });

  program
    .command('enqueue')
    .description(
      'add a job by writing to the database directly (DATABASE_URL, or the embedded one in HERALD_DATA_DIR; no server needed) ' +
        'and print it as JSON. Options are checked like POST /api/jobs',
    )
    .argument('<kind>', 'the task kind')
    .argument('[payload]', 'the payload, as JSON', '{}')
    .option('--queue <queue>', `queue name (default ${DEFAULTS.queue})`)
    .option('--priority <n>', `priority, -32768 to 32767; higher runs first (default ${DEFAULTS.priority})`, integerOrText)
    .option('--run-at <iso>', 'do not run before this time (ISO 8601 with a time zone)')
    .option('--max-attempts <n>', `attempts before the job fails (default ${DEFAULTS.maxAttempts})`, integerOrText)
    .option('--idempotency-key <key>', 'the same key returns the same job')
    .option('--group <group>', 'the key of per-group limits (a tenant, a customer)')
    .option('--tags <list>', 'labels to filter by (comma-separated)', csv)
    .option('--requires <list>', 'capabilities a worker must offer (comma-separated)', csv)
    .option('--timeout-ms <n>', 'an attempt running longer fails', integerOrText)
    .option('--expire-at <iso>', 'a job still queued at this time never starts')
    .action(async (kind: string, payloadText: string, opts: EnqueueOptions) => {
      const input = enqueueInputOf(kind, payloadText, opts);
      const db = await boot(config, log, life);
      const pool = createPool(db.url, { max: 1 });
      life.started('pool', () => pool.end());
      const { job } = await new Queue(pool).enqueue(input);
      process.stdout.write(`${JSON.stringify(job)}\n`);
      await life.stop();
    });

  program
    .command('worker')
    .description('run a worker process')
    .option('--queues <list>', 'queues to take (comma-separated; default all)', csv)
    .option('--concurrency <n>', `concurrent job slots (env HERALD_CONCURRENCY, default ${DEFAULTS.concurrency})`, positiveInt)
    .option('--tasks <dir>', 'directory of task files KIND.ts / KIND.js')
    .option('--capabilities <list>', 'tags this worker offers, for jobs that require them', csv)
    .action(async (opts: WorkerCliOptions) => {
      await startTracing(life, log);
      const { startWorker } = await import('../worker/index.ts');
      const db = await boot(config, log, life);
      const worker = await startWorker({
        ...workerSettings(config),
        databaseUrl: db.url,
        listenUrl: db.listenUrl,
        queues: opts.queues ?? config.queues,
        concurrency: opts.concurrency ?? config.concurrency,
        tasksDir: opts.tasks,
        capabilities: opts.capabilities ?? [],
        logger: log,
      });
      life.started('worker', () => worker.stop());
    });

  withServerOptions(program.command('server').description('run the HTTP/SSE server and the board (no worker)')).action(async (opts: ServerCliOptions) => {
    await checkTokens(config);
    await startTracing(life, log);
    const { announceListening, startServer } = await import('../server/index.ts');
    const streams = await import('../server/cluster.ts');
    const processes = config.streamProcesses;
    if (streams.isStreamChild()) {
      // The primary started the database and ran the migrations; DATABASE_URL and HERALD_LISTEN_URL name it.
      process.once('disconnect', () => void life.stop().finally(() => process.exit(0)));
      const maxStreams = streams.childMaxStreams(config.maxStreams, processes);
      const server = await startServer({ ...serverSettings(config, opts), maxStreams, databaseUrl: config.databaseUrl!, listenUrl: config.listenUrl, logger: log, announce: false });
      life.started('server', () => server.stop());
      return streams.childListening(server.url);
    }
    const db = await boot(config, log, life);
    let url: string;
    if (processes > 1) {
      const children = await streams.startStreamCluster(processes, { DATABASE_URL: db.url, HERALD_LISTEN_URL: db.listenUrl }, log);
      life.started('server', () => children.stop());
      url = children.url;
      announceListening(log, url, (await import('../server/auth.ts')).parseTokens(config.tokens), processes);
    } else {
      const server = await startServer({ ...serverSettings(config, opts), databaseUrl: db.url, listenUrl: db.listenUrl, logger: log });
      life.started('server', () => server.stop());
      url = server.url;
    }
    log.info({ board: `${url}/` }, `the board is at ${url}/; jobs run once a worker does: npx herald worker --tasks ./tasks`);
  });

  withServerOptions(program.command('start').description('everything on one machine: database, migrations, server, a worker and the board'))
    .option('--concurrency <n>', `the worker's job slots (env HERALD_CONCURRENCY, default ${DEFAULTS.concurrency})`, positiveInt)
    .option('--queues <list>', 'queues the worker takes (comma-separated; default all)', csv)
    .action(async (opts: StartOptions) => {
      await checkTokens(config);
      await startTracing(life, log);
      const [{ startServer }, { startWorker }, { ensureBoardBuilt }] = await Promise.all([
        import('../server/index.ts'),
        import('../worker/index.ts'),
        import('../server/board.ts'),
      ]);
      await ensureBoardBuilt(log);
      const db = await boot(config, log, life);
      const server = await startServer({ ...serverSettings(config, opts), databaseUrl: db.url, listenUrl: db.listenUrl, logger: log });
      life.started('server', () => server.stop());
      const worker = await startWorker({
        ...workerSettings(config),
        databaseUrl: db.url,
        listenUrl: db.listenUrl,
        queues: opts.queues ?? config.queues,
        concurrency: opts.concurrency ?? config.concurrency,
        capabilities: [],
        logger: log,
      });
      life.started('worker', () => worker.stop());
      const url = server.url;
      log.info({ board: `${url}/` }, `Herald is running: the board is at ${url}/`);
      log.info(
        `next: enqueue a job and watch it on the board: curl -X POST ${url}/api/jobs -H 'content-type: application/json' -d '{"kind":"echo","payload":{"hello":"world"}}'; ` +
          'your own tasks: write tasks/hello.ts and run npx herald worker --tasks ./tasks (README, Quick start)',
      );
    });

  await program.parseAsync(process.argv);
}

function workerSettings(c: HeraldConfig) {
  return {
    leaseMs: c.leaseMs,
    pollMs: c.pollMs,
    backoffBaseMs: c.backoffBaseMs,
    backoffMaxMs: c.backoffMaxMs,
    shutdownGraceMs: c.shutdownGraceMs,
    retentionMs: c.retentionMs,
    asyncCommit: c.asyncCommit,
  };
}

function serverSettings(c: HeraldConfig, opts: ServerCliOptions) {
  return { host: opts.host ?? c.host, port: opts.port ?? c.port, tokens: c.tokens, maxStreams: c.maxStreams };
}

// Set once the logger exists; until then nothing has been started that would need stopping.
let started: ProcessLife | undefined;

main().catch((err) => {
  if (started) return started.fail(err);
  process.stderr.write(`herald: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
