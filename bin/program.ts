// The `herald` commands (README, "Commands") as a commander program. Each one reads its settings
// from the environment (queue/config.ts) and lets flags override them. bin/cli.ts runs it for a
// process; tests parse argv with it in-process.
import fs from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import type { HeraldConfig } from '../queue/config.ts';
import { openDatabase, createPool, type Database } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import type { Logger } from '../queue/log.ts';
import { Queue } from '../queue/queue.ts';
import { DEFAULTS, MAX_NAME_LENGTH, NAME_RULE } from '../queue/defaults.ts';
import { NAME_CHARS } from '../queue/schema/base.ts';
import type { Life } from './process-life.ts';
import { startTracing } from './tracing.ts';
import { enqueueInputOf, integerOrText, type EnqueueOptions } from './enqueue-input.ts';
import { environmentHelp } from './help.ts';
import { noWorkerWarning } from './no-worker.ts';

const { version } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

const csv = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
// A job's lists keep an empty item ("a,,b"), so the schema refuses it instead of dropping it unseen.
const items = (v: string) => v.split(',').map((s) => s.trim());
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
  watch?: boolean;
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

async function boot(config: HeraldConfig, log: Logger, life: Life): Promise<Database> {
  const db = await openDatabase({ databaseUrl: config.databaseUrl, listenUrl: config.listenUrl, dataDir: config.dataDir, logger: log });
  life.started('database', () => db.close());
  // Migrations hold a session advisory lock: run them on the direct session, not a pooler.
  await migrate(db.listenUrl);
  return db;
}

/** The `herald` program: its commands boot with `config`, log to `log`, and register what they start with `life`. */
export function heraldProgram(config: HeraldConfig, log: Logger, life: Life): Command {
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
    .option('--tags <list>', 'labels to filter by (comma-separated)', items)
    .option('--requires <list>', 'capabilities a worker must offer (comma-separated)', items)
    .option('--timeout-ms <n>', 'an attempt running longer fails', integerOrText)
    .option('--expire-at <iso>', 'a job still queued at this time never starts (a time to come)')
    .option('--depends-on <ids>', 'existing jobs to wait for (comma-separated ids): blocked until they end', items)
    .option('--on-parent-failure <what>', 'cancel (default): a parent that does not succeed cancels it; run: it runs anyway')
    .action(async (kind: string, payloadText: string, opts: EnqueueOptions) => {
      const input = enqueueInputOf(kind, payloadText, opts);
      const db = await boot(config, log, life);
      const pool = createPool(db.url, { max: 1 });
      life.started('pool', () => pool.end());
      const queue = new Queue(pool);
      const { job } = await queue.enqueue(input);
      process.stdout.write(`${JSON.stringify(job)}\n`);
      const warning = await noWorkerWarning(queue, job);
      if (warning) log.warn({ job: job.id, kind: job.kind, queue: job.queue }, warning);
      await life.stop();
    });

  program
    .command('signal')
    .description(
      "send a signal to a job (its handler's ctx.waitFor) by writing to the database directly, as enqueue does, " +
        'and print {jobId, name, woken} as JSON. A second signal of that name, or an ended job, is refused',
    )
    .argument('<job>', 'the job id', (v: string) => {
      if (!/^[0-9]{1,19}$/.test(v)) throw new InvalidArgumentError('a job id is digits');
      return v;
    })
    .argument('<name>', `the signal name (${NAME_RULE})`, (v: string) => {
      if (v.length > MAX_NAME_LENGTH || !new RegExp(`^${NAME_CHARS}+$`).test(v)) throw new InvalidArgumentError(`a signal name is ${NAME_RULE}`);
      return v;
    })
    .argument('[payload]', 'what ctx.waitFor returns, as JSON', (v: string) => {
      try {
        return JSON.parse(v) as unknown;
      } catch (err) {
        throw new InvalidArgumentError(`the payload is not JSON: ${(err as Error).message}`);
      }
    })
    .action(async (jobId: string, name: string, payload: unknown) => {
      const db = await boot(config, log, life);
      const pool = createPool(db.url, { max: 1 });
      life.started('pool', () => pool.end());
      const sent = await new Queue(pool).signal(jobId, name, payload);
      process.stdout.write(`${JSON.stringify({ jobId, name, ...sent })}\n`);
      await life.stop();
    });

  program
    .command('worker')
    .description('run a worker process')
    .option('--queues <list>', 'queues to take (comma-separated; default all but dead-letter queues)', csv)
    .option('--concurrency <n>', `concurrent job slots (env HERALD_CONCURRENCY, default ${DEFAULTS.concurrency})`, positiveInt)
    .option('--tasks <dir>', 'directory of task files KIND.ts / KIND.js')
    .option('--capabilities <list>', 'tags this worker offers, for jobs that require them', csv)
    .option('--watch', 'for development: restart the worker whenever a file under --tasks changes')
    .action(async (opts: WorkerCliOptions) => {
      if (opts.watch) {
        if (!opts.tasks) throw new InvalidArgumentError('--watch needs --tasks DIR: the directory to watch');
        // The child is this command without --watch; it boots the database as a worker would.
        const { watchWorker } = await import('./watch-worker.ts');
        const args = ['--tasks', opts.tasks];
        if (opts.queues) args.push('--queues', opts.queues.join(','));
        if (opts.concurrency) args.push('--concurrency', String(opts.concurrency));
        if (opts.capabilities) args.push('--capabilities', opts.capabilities.join(','));
        return watchWorker(args, opts.tasks, log, life);
      }
      // The child of `herald worker --watch`: it stops when its parent is gone.
      if (process.channel) process.once('disconnect', () => void life.stop().finally(() => process.exit(0)));
      await startTracing(life, log);
      const { startWorker } = await import('../worker/index.ts');
      const db = await boot(config, log, life);
      const worker = await startWorker({ ...workerSettings(config, db, opts), tasksDir: opts.tasks, capabilities: opts.capabilities ?? [], logger: log });
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
    .option('--queues <list>', 'queues the worker takes (comma-separated; default all but dead-letter queues)', csv)
    .action(async (opts: StartOptions) => {
      await checkTokens(config);
      await startTracing(life, log);
      const [{ startServer }, { startWorker }, { ensureBoardBuilt }] = await Promise.all([
        import('../server/index.ts'),
        import('../worker/index.ts'),
        import('../server/board.ts'),
      ]);
      const { host, port } = serverSettings(config, opts);
      await ensureBoardBuilt(log, `http://${host.includes(':') ? `[${host}]` : host}:${port}/`);
      const db = await boot(config, log, life);
      const server = await startServer({ ...serverSettings(config, opts), databaseUrl: db.url, listenUrl: db.listenUrl, logger: log });
      life.started('server', () => server.stop());
      const worker = await startWorker({ ...workerSettings(config, db, opts), capabilities: [], logger: log });
      life.started('worker', () => worker.stop());
      const url = server.url;
      log.info({ board: `${url}/` }, `Herald is running: the board is at ${url}/`);
      log.info(
        `next: enqueue a job and watch it on the board: curl -X POST ${url}/api/jobs -H 'content-type: application/json' -d '{"kind":"echo","payload":{"hello":"world"}}'; ` +
          'your own tasks: write tasks/hello.ts and run npx herald worker --tasks ./tasks (README, Quick start)',
      );
    });

  return program;
}

/** A worker's settings: the environment's, the database booted, and the command's --queues and --concurrency. */
function workerSettings(c: HeraldConfig, db: Database, opts: { queues?: string[]; concurrency?: number }) {
  return {
    databaseUrl: db.url,
    listenUrl: db.listenUrl,
    queues: opts.queues ?? c.queues,
    concurrency: opts.concurrency ?? c.concurrency,
    leaseMs: c.leaseMs,
    pollMs: c.pollMs,
    backoffBaseMs: c.backoffBaseMs,
    backoffMaxMs: c.backoffMaxMs,
    shutdownGraceMs: c.shutdownGraceMs,
    lockLossGraceMs: c.lockLossGraceMs,
    retentionMs: c.retentionMs,
    asyncCommit: c.asyncCommit,
  };
}

function serverSettings(c: HeraldConfig, opts: ServerCliOptions) {
  return { host: opts.host ?? c.host, port: opts.port ?? c.port, tokens: c.tokens, maxStreams: c.maxStreams, readUrl: c.readUrl, readMaxLagMs: c.readMaxLagMs };
}
