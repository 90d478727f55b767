// The `herald` commands (README, "Commands"). Each one reads its settings from the environment
// (queue/config.ts) and lets flags override them.
import { Command, InvalidArgumentError } from 'commander';
import { loadConfig, type HeraldConfig } from '../queue/config.ts';
import { openDatabase, createPool, type Database } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { createLogger, type Logger } from '../queue/log.ts';
import { Queue } from '../queue/queue.ts';
import { DEFAULTS } from '../queue/defaults.ts';
import { ProcessLife } from './process-life.ts';

const csv = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

/** What commander parses from `herald enqueue`'s options. */
interface EnqueueOptions {
  queue: string;
  priority: number;
  runAt?: string;
  maxAttempts?: number;
  idempotencyKey?: string;
}

/** What commander parses from `herald worker`'s options. */
interface WorkerCliOptions {
  queues?: string[];
  concurrency?: number;
  tasks?: string;
  capabilities?: string[];
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
  const program = new Command('herald').description('Herald: a PostgreSQL job queue').showHelpAfterError();

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
    .description('add a job and print it as JSON')
    .argument('<kind>', 'the task kind')
    .argument('[payload]', 'the payload, as JSON', '{}')
    .option('--queue <queue>', 'queue name', DEFAULTS.queue)
    .option('--priority <n>', 'priority (higher runs first)', (v) => Number.parseInt(v, 10), 0)
    .option('--run-at <iso>', 'do not run before this time')
    .option('--max-attempts <n>', 'attempts before the job fails', positiveInt)
    .option('--idempotency-key <key>', 'the same key returns the same job')
    .action(async (kind: string, payloadText: string, opts: EnqueueOptions) => {
      let payload: unknown;
      try {
        payload = JSON.parse(payloadText);
      } catch {
        throw new InvalidArgumentError(`payload is not valid JSON: ${payloadText}`);
      }
      const db = await boot(config, log, life);
      const pool = createPool(db.url, { max: 1 });
      life.started('pool', () => pool.end());
      const { job } = await new Queue(pool).enqueue({
        kind, payload, queue: opts.queue, priority: opts.priority, runAt: opts.runAt,
        maxAttempts: opts.maxAttempts, idempotencyKey: opts.idempotencyKey,
      });
      process.stdout.write(`${JSON.stringify(job)}\n`);
      await life.stop();
    });

  program
    .command('worker')
    .description('run a worker process')
    .option('--queues <list>', 'queues to take (comma-separated; default all)', csv)
    .option('--concurrency <n>', 'concurrent job slots', positiveInt)
    .option('--tasks <dir>', 'directory of task files KIND.ts / KIND.js')
    .option('--capabilities <list>', 'tags this worker offers, for jobs that require them', csv)
    .action(async (opts: WorkerCliOptions) => {
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

  program
    .command('server')
    .description('run the HTTP/SSE server')
    .action(async () => {
      const { startServer } = await import('../server/index.ts');
      const db = await boot(config, log, life);
      const server = await startServer({ ...serverSettings(config), databaseUrl: db.url, listenUrl: db.listenUrl, logger: log });
      life.started('server', () => server.stop());
    });

  program
    .command('start')
    .description('everything on one machine: database, migrations, server, a worker and the board')
    .action(async () => {
      const [{ startServer }, { startWorker }, { ensureBoardBuilt }] = await Promise.all([
        import('../server/index.ts'),
        import('../worker/index.ts'),
        import('../server/board.ts'),
      ]);
      await ensureBoardBuilt(log);
      const db = await boot(config, log, life);
      const server = await startServer({ ...serverSettings(config), databaseUrl: db.url, listenUrl: db.listenUrl, logger: log });
      life.started('server', () => server.stop());
      const worker = await startWorker({
        ...workerSettings(config),
        databaseUrl: db.url,
        listenUrl: db.listenUrl,
        queues: config.queues,
        concurrency: config.concurrency,
        capabilities: [],
        logger: log,
      });
      life.started('worker', () => worker.stop());
      log.info(`Herald is running: the board is at ${server.url}/`);
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
  };
}

function serverSettings(c: HeraldConfig) {
  return { host: c.host, port: c.port, tokens: c.tokens, maxStreams: c.maxStreams };
}

// Set once the logger exists; until then nothing has been started that would need stopping.
let started: ProcessLife | undefined;

main().catch((err) => {
  if (started) return started.fail(err);
  process.stderr.write(`herald: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
