// The `herald` commands (README, "Commands"). Each one reads its settings from the environment
// (queue/config.ts) and lets flags override them.
import { Command, InvalidArgumentError } from 'commander';
import { loadConfig, type HeraldConfig } from '../queue/config.ts';
import { openDatabase, createPool, type Database } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { createLogger, type Logger } from '../queue/log.ts';
import { Queue } from '../queue/queue.ts';
import { DEFAULTS } from '../queue/defaults.ts';

const csv = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Runs until SIGINT/SIGTERM. The first signal stops the parts in order (worker drains, server
 * closes, then the embedded database stops) and exits 0; a second signal exits at once.
 */
function runUntilSignal(log: Logger, parts: Stoppable[], db: Database): void {
  let stopping = false;
  const onSignal = async (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    try {
      for (const p of parts) await p.stop();
      await db.close();
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

async function boot(config: HeraldConfig, log: Logger): Promise<Database> {
  const db = await openDatabase({ databaseUrl: config.databaseUrl, listenUrl: config.listenUrl, dataDir: config.dataDir, logger: log });
  // Migrations hold a session advisory lock: run them on the direct session, not a pooler.
  await migrate(db.listenUrl);
  return db;
}

async function main() {
  const config = loadConfig();
  const log = createLogger(config.logLevel, { stderr: process.argv[2] === 'enqueue', format: config.logFormat });
  const program = new Command('herald').description('Herald: a PostgreSQL job queue').showHelpAfterError();

  program
    .command('migrate')
    .description('apply the migrations and exit')
    .action(async () => {
      const db = await boot(config, log);
      log.info('migrations applied');
      await db.close();
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
    .action(async (kind: string, payloadText: string, opts) => {
      let payload: unknown;
      try {
        payload = JSON.parse(payloadText);
      } catch {
        throw new InvalidArgumentError(`payload is not valid JSON: ${payloadText}`);
      }
      const db = await boot(config, log);
      const pool = createPool(db.url, { max: 1 });
      try {
        const { job } = await new Queue(pool).enqueue({
          kind, payload, queue: opts.queue, priority: opts.priority, runAt: opts.runAt,
          maxAttempts: opts.maxAttempts, idempotencyKey: opts.idempotencyKey,
        });
        process.stdout.write(`${JSON.stringify(job)}\n`);
      } finally {
        await pool.end();
        await db.close();
      }
    });

  program
    .command('worker')
    .description('run a worker process')
    .option('--queues <list>', 'queues to take (comma-separated; default all)', csv)
    .option('--concurrency <n>', 'concurrent job slots', positiveInt)
    .option('--tasks <dir>', 'directory of task files KIND.ts / KIND.js')
    .option('--capabilities <list>', 'tags this worker offers, for jobs that require them', csv)
    .action(async (opts) => {
      const { startWorker } = await import('../worker/index.ts');
      const db = await boot(config, log);
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
      runUntilSignal(log, [worker], db);
    });

  program
    .command('server')
    .description('run the HTTP/SSE server')
    .action(async () => {
      const { startServer } = await import('../server/index.ts');
      const db = await boot(config, log);
      const server = await startServer({ ...serverSettings(config), databaseUrl: db.url, listenUrl: db.listenUrl, logger: log });
      runUntilSignal(log, [server], db);
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
      const db = await boot(config, log);
      const server = await startServer({ ...serverSettings(config), databaseUrl: db.url, listenUrl: db.listenUrl, logger: log });
      const worker = await startWorker({
        ...workerSettings(config),
        databaseUrl: db.url,
        listenUrl: db.listenUrl,
        queues: config.queues,
        concurrency: config.concurrency,
        capabilities: [],
        logger: log,
      });
      log.info(`Herald is running: the board is at ${server.url}/`);
      runUntilSignal(log, [worker, server], db);
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
  return { host: c.host, port: c.port, tokens: c.tokens };
}

main().catch((err) => {
  // One line a person can act on; the stack only at debug level.
  process.stderr.write(`herald: ${err instanceof Error ? err.message : String(err)}\n`);
  if (process.env.HERALD_LOG_LEVEL === 'debug' && err instanceof Error) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
