// The `herald` command line as a user meets it: --version, --help with the environment and
// defaults, each command's options, and `herald enqueue` refusing a bad option like POST /api/jobs
// does, before it touches the database. The program is parsed in-process (bin/program.ts); two
// spawned processes keep what only a process shows: a refusal's one line and exit code 1, and a
// job enqueued and printed.
import fs from 'node:fs';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CommanderError } from 'commander';
import { heraldProgram } from '../bin/program.ts';
import type { Life } from '../bin/process-life.ts';
import { loadConfig } from '../queue/config.ts';
import { DEFAULTS } from '../queue/defaults.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { spawnHerald } from './support/herald-process.ts';
import { watchLog } from './support/log-watch.ts';
import { Worker } from '../worker/worker.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

/** What a command starts, stopped newest first, as ProcessLife does (without its signal handlers). */
function testLife(): Life {
  const parts: (() => Promise<void>)[] = [];
  return {
    started: (_name, stop) => void parts.push(stop),
    stop: async () => {
      for (const stop of parts.splice(0).reverse()) await stop();
    },
  };
}

/**
 * `herald ARGS` parsed in-process, on the test database: what it printed (commander's help and
 * errors, and what the command wrote to stdout), and how it ended (commander's exit for --help and
 * --version, or the refusal the command threw).
 */
async function parse(args: string[], logger: Logger = pino({ level: 'silent' })): Promise<{ out: string; error?: Error & Partial<CommanderError> }> {
  let out = '';
  const life = testLife();
  const program = heraldProgram({ ...loadConfig(), databaseUrl: db.url, listenUrl: db.url }, logger, life);
  for (const command of [program, ...program.commands]) {
    command.exitOverride().configureOutput({ writeOut: (s) => void (out += s), writeErr: (s) => void (out += s) });
  }
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((s) => ((out += String(s)), true));
  try {
    await program.parseAsync(args, { from: 'user' });
    return { out };
  } catch (error) {
    return { out, error: error as Error };
  } finally {
    stdout.mockRestore();
    await life.stop();
  }
}

/**
 * Runs `herald ARGS` as a process to its exit; its output lines (stdout and stderr) as text, and
 * what it wrote to stdout alone.
 */
async function herald(args: string[], env: Record<string, string | undefined> = {}) {
  const proc = spawnHerald(args, { HERALD_LOG_FORMAT: 'json', ...env });
  let stdout = '';
  proc.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const { code } = await proc.exited;
  const text = proc.lines.map((l) => (l.level === undefined && typeof l.msg === 'string' ? l.msg : JSON.stringify(l))).join('\n');
  return { code, text, lines: proc.lines, stdout };
}

const noJobs = async () => expect((await db.queue.list({})).jobs).toEqual([]);

describe('help and version', () => {
  it('--version prints the package version', async () => {
    const { version } = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const { out, error } = await parse([flag]);
      expect(error).toMatchObject({ code: 'commander.version', exitCode: 0 });
      expect(out.trim()).toBe(version);
    }
  });

  it('--help lists the environment variables with their defaults', async () => {
    const { out: text, error } = await parse(['--help']);
    expect(error).toMatchObject({ code: 'commander.helpDisplayed', exitCode: 0 });
    expect(text).toMatch(/^ {2}DATABASE_URL +the database \(default: unset: embedded PostgreSQL\)$/m);
    expect(text).toMatch(new RegExp(`^ {2}PORT +.*\\(default: ${DEFAULTS.port}\\)$`, 'm'));
    expect(text).toMatch(new RegExp(`^ {2}HOST +.*\\(default: ${DEFAULTS.host.replace(/\./g, '\\.')}\\)$`, 'm'));
    expect(text).toMatch(new RegExp(`^ {2}HERALD_CONCURRENCY +.*--concurrency.*\\(default: ${DEFAULTS.concurrency}\\)$`, 'm'));
    for (const name of ['HERALD_TOKENS', 'HERALD_DATA_DIR', 'HERALD_LOG_LEVEL', 'HERALD_LOG_FORMAT', 'HERALD_LEASE_MS', 'HERALD_RETENTION_MS']) {
      expect(text).toMatch(new RegExp(`^ {2}${name} `, 'm'));
    }
  });

  it('start and server show their options, worker its concurrency default', async () => {
    for (const command of ['start', 'server', 'worker']) {
      const { out: text, error } = await parse([command, '--help']);
      expect(error?.exitCode, command).toBe(0);
      if (command !== 'worker') expect(text, command).toMatch(/--host <host>[\s\S]*--port <n>/);
      // Commander wraps long descriptions.
      if (command !== 'server') expect(text.replace(/\s+/g, ' '), command).toMatch(new RegExp(`--concurrency <n> .*default ${DEFAULTS.concurrency}\\)`));
    }
  });

  it('enqueue --help says it writes to the database directly', async () => {
    const { out: text } = await parse(['enqueue', '--help']);
    expect(text.replace(/\s+/g, ' ')).toMatch(/by writing to the database directly/);
    for (const option of ['--priority', '--run-at', '--max-attempts', '--idempotency-key', '--group', '--tags', '--requires', '--timeout-ms', '--expire-at', '--depends-on', '--on-parent-failure']) {
      expect(text).toContain(option);
    }
  });
});

describe('herald worker', () => {
  it('refuses --watch without --tasks, before it starts anything', async () => {
    expect((await parse(['worker', '--watch'])).error?.message).toBe('--watch needs --tasks DIR: the directory to watch');
  });
});

describe('herald signal', () => {
  // In-process, on the test database. Mutation caught: the action passing no payload to
  // Queue.signal (the stored value, what ctx.waitFor returns, would be null).
  it('stores the signal for the job and prints it; refuses a second one, a bad name and a payload that is not JSON', async () => {
    const { job } = await db.queue.enqueue({ kind: 'waiter', queue: 'signals' });
    const sent = await parse(['signal', job.id, 'approve', '{"approved":true}']);
    expect(sent.error).toBeUndefined();
    expect(sent.out).toBe(`${JSON.stringify({ jobId: job.id, name: 'approve', woken: false })}\n`);
    const stored = async () => (await db.pool.query(`SELECT name, payload FROM herald.job_signals WHERE job_id = $1`, [job.id])).rows;
    expect(await stored()).toEqual([{ name: 'approve', payload: { approved: true } }]);
    expect((await parse(['signal', job.id, 'approve', '{}'])).error?.message).toBe(`job ${job.id} already holds a signal "approve"; a job takes one value per name`);
    expect((await parse(['signal', job.id, 'no spaces'])).error?.message).toContain('a signal name is');
    expect((await parse(['signal', job.id, 'other', '{nope'])).error?.message).toContain('the payload is not JSON');
    expect(await stored()).toEqual([{ name: 'approve', payload: { approved: true } }]);
    await db.pool.query(`DELETE FROM herald.jobs WHERE queue = 'signals'`); // the other tests expect none
  });
});

describe('herald enqueue', () => {
  // In-process, on the test database: a refusal that let the job through would write it there.
  it.each([
    [['--priority', 'high'], '--priority must be an integer from -32768 to 32767'],
    [['--priority', '1.5'], '--priority must be an integer from -32768 to 32767'],
    [['--max-attempts', '0'], '--max-attempts must be an integer from 1 to 1000'],
    [['--run-at', 'tomorrow'], '--run-at must be an ISO 8601 date-time with a time zone'],
    [['--queue', 'no spaces'], '--queue must be 1-128 characters of [A-Za-z0-9_.:-]'],
    [['--tags', 'ok,not ok'], '--tags[1] must be'],
    // Mutation caught: --tags parsed with csv (empty items dropped), so "a,,b" became ["a","b"].
    [['--tags', 'a,,b'], '--tags[1] must be'],
    [['--depends-on', '12,x'], '--depends-on[1] must be a list of job ids'],
    [['--on-parent-failure', 'ignore'], '--on-parent-failure must be one of cancel, run'],
    // Mutation caught: the expireAt check in enqueueInputOf removed (the job would expire at once).
    [['--expire-at', '2020-01-01T00:00:00Z'], '--expire-at must be a time to come'],
    [['--timeout-ms', '-5'], '--timeout-ms must be an integer number of milliseconds from 1 to 86400000'],
  ])('refuses %j with the same rule as the HTTP API, and writes nothing', async (options, message) => {
    const { error } = await parse(['enqueue', 'echo', '{}', ...options]);
    expect(error?.message).toContain(message);
    expect(error?.message).not.toMatch(/violates|constraint|null value/);
    await noJobs();
  });

  // In-process, on the test database. Mutation caught: program.ts's --depends-on without its
  // `items` parser (the ids then reach the schema as one string and the enqueue is refused).
  it('--depends-on enqueues the job blocked on exactly those parents, until both have ended', async () => {
    const queue = 'cli-depends';
    const enqueue = async (args: string[]) => {
      const { out, error } = await parse(['enqueue', ...args, '--queue', queue]);
      expect(error).toBeUndefined();
      return JSON.parse(out) as { id: string; status: string; dependsOn: string[] };
    };
    try {
      const p1 = await enqueue(['cli-parent', '{"n":1}']);
      await enqueue(['cli-parent', '{"n":2}', '--run-at', '2099-01-01T00:00:00Z']); // not a parent
      const p2 = await enqueue(['cli-parent', '{"n":3}']);
      const child = await enqueue(['cli-child', '{}', '--depends-on', `${p1.id},${p2.id}`]);
      expect(child).toMatchObject({ status: 'blocked', dependsOn: [p1.id, p2.id] });
      const edges = await db.pool.query(`SELECT parent::text FROM herald.job_edges WHERE child = $1 ORDER BY pos`, [child.id]);
      expect(edges.rows).toEqual([{ parent: p1.id }, { parent: p2.id }]);
      expect((await db.queue.parents(child.id)).map((p) => p.id)).toEqual([p1.id, p2.id]);
      expect((await db.queue.get(child.id))?.status).toBe('blocked');

      // It waits for both: one parent done leaves it blocked, the second queues it.
      const finish = async () => {
        const [job] = await db.queue.claim({ worker: 'cli-test', kinds: ['cli-parent'], limit: 1 });
        await db.queue.complete('cli-test', [{ id: job.id, attempt: job.attempt, result: null }]);
      };
      await finish();
      expect((await db.queue.get(child.id))?.status).toBe('blocked');
      await finish();
      expect((await db.queue.get(child.id))?.status).toBe('queued');
    } finally {
      await db.pool.query(`DELETE FROM herald.jobs WHERE queue = $1`, [queue]); // the other tests expect none
    }
  });

  it('refuses a bad kind and a payload that is not JSON', async () => {
    expect((await parse(['enqueue', 'bad kind'])).error?.message).toContain('kind must be 1-128 characters');
    expect((await parse(['enqueue', 'echo', '{nope'])).error?.message).toContain('payload is not valid JSON');
    await noJobs();
  });

  // Mutation caught: noWorkerWarning returning null always (the warning never printed).
  it('warns when no live worker runs the kind, naming the kinds they do run; not when one does', async () => {
    const w = new Worker({ databaseUrl: db.url, concurrency: 1, queues: ['typo'], scheduler: false, tasks: { echo: async () => null } });
    await w.start();
    try {
      const typo = watchLog('warn');
      await parse(['enqueue', 'ech0', '{}', '--queue', 'typo'], typo.logger);
      expect((await typo.line('waits until one does')).msg).toMatch(
        /^no live worker of queue typo runs kind "ech0" \(they run: (\w+, )*echo(, \w+)*\); the job waits until one does \(waitingFor: no_worker\)$/,
      );
      const fine = watchLog('warn');
      await parse(['enqueue', 'echo', '{}', '--queue', 'typo'], fine.logger);
      expect(fine.lines()).toEqual([]);
    } finally {
      await w.stop();
      await db.pool.query(`DELETE FROM herald.jobs WHERE queue = 'typo'`); // the other tests expect none
    }
  });

  it('a refusing process says why in one line and exits 1', { timeout: 240_000 }, async () => {
    const { code, text } = await herald(['enqueue', 'echo', '{}', '--priority', 'high'], { DATABASE_URL: db.url });
    expect(code).toBe(1);
    expect(text.split('\n').filter((l) => l.startsWith('herald:'))).toEqual(['herald: --priority must be an integer from -32768 to 32767']);
    await noJobs();
  });

  it('enqueues with every option and prints the job', { timeout: 240_000 }, async () => {
    const { code, lines, stdout } = await herald(
      ['enqueue', 'echo', '{"a":1}', '--queue', 'cli', '--priority', '-3', '--max-attempts', '2', '--run-at', '2030-01-01T00:00:00Z',
        '--idempotency-key', 'k1', '--group', 'g', '--tags', 'x,y', '--requires', 'gpu', '--timeout-ms', '500', '--expire-at', '2031-01-01T00:00:00Z'],
      { DATABASE_URL: db.url },
    );
    expect(code).toBe(0);
    // stdout is the job alone, for a pipe (`| jq`); the warning that no worker takes queue cli
    // went to stderr (mutation caught: createLogger's stderr option not passed for enqueue).
    expect(JSON.parse(stdout)).toMatchObject({ kind: 'echo', queue: 'cli' });
    expect(lines.some((l) => typeof l.msg === 'string' && l.msg.startsWith('no live worker takes queue cli;'))).toBe(true);
    const printed = lines.find((l) => l.kind === 'echo');
    expect(printed).toMatchObject({
      queue: 'cli', payload: { a: 1 }, priority: -3, maxAttempts: 2, runAt: '2030-01-01T00:00:00.000Z', idempotencyKey: 'k1',
      group: 'g', tags: ['x', 'y'], requires: ['gpu'], timeoutMs: 500, expireAt: '2031-01-01T00:00:00.000Z',
    });
    expect((await db.queue.get(String(printed!.id)))?.priority).toBe(-3);
  });
});
