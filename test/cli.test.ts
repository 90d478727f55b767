// The `herald` command line as a user meets it, in spawned processes: --version, --help with the
// environment and defaults, each command's options, and `herald enqueue` refusing a bad option
// like POST /api/jobs does, before it touches the database.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../queue/defaults.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { spawnHerald } from './support/herald-process.ts';

/** Runs `herald ARGS` to its exit; its output lines (stdout and stderr) as text. */
async function herald(args: string[], env: Record<string, string | undefined> = {}) {
  const proc = spawnHerald(args, { HERALD_LOG_FORMAT: 'json', ...env });
  const { code } = await proc.exited;
  const text = proc.lines.map((l) => (l.level === undefined && typeof l.msg === 'string' ? l.msg : JSON.stringify(l))).join('\n');
  return { code, text, lines: proc.lines };
}

// Each test spawns processes that compile TypeScript at start: slow on a loaded machine.
const SPAWNS = { timeout: 240_000 };

describe('help and version', SPAWNS, () => {
  it('--version prints the package version', async () => {
    const { version } = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const { code, text } = await herald([flag]);
      expect(code).toBe(0);
      expect(text.trim()).toBe(version);
    }
  });

  it('--help lists the environment variables with their defaults', async () => {
    const { code, text } = await herald(['--help']);
    expect(code).toBe(0);
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
      const { code, text } = await herald([command, '--help']);
      expect(code, command).toBe(0);
      if (command !== 'worker') expect(text, command).toMatch(/--host <host>[\s\S]*--port <n>/);
      // Commander wraps long descriptions.
      if (command !== 'server') expect(text.replace(/\s+/g, ' '), command).toMatch(new RegExp(`--concurrency <n> .*default ${DEFAULTS.concurrency}\\)`));
    }
  });

  it('enqueue --help says it writes to the database directly', async () => {
    const { text } = await herald(['enqueue', '--help']);
    expect(text.replace(/\s+/g, ' ')).toMatch(/by writing to the database directly/);
    for (const option of ['--priority', '--run-at', '--max-attempts', '--idempotency-key', '--group', '--tags', '--requires', '--timeout-ms', '--expire-at']) {
      expect(text).toContain(option);
    }
  });
});

describe('herald enqueue', SPAWNS, () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it.each([
    [['--priority', 'high'], '--priority must be an integer from -32768 to 32767'],
    [['--priority', '1.5'], '--priority must be an integer from -32768 to 32767'],
    [['--max-attempts', '0'], '--max-attempts must be an integer from 1 to 1000'],
    [['--run-at', 'tomorrow'], '--run-at must be an ISO 8601 date-time with a time zone'],
    [['--queue', 'no spaces'], '--queue must be 1-128 characters of [A-Za-z0-9_.:-]'],
    [['--tags', 'ok,not ok'], '--tags[1] must be'],
    [['--timeout-ms', '-5'], '--timeout-ms must be an integer number of milliseconds from 1 to 86400000'],
  ])('refuses %j with the same rule as the HTTP API, and writes nothing', async (options, message) => {
    const { code, text } = await herald(['enqueue', 'echo', '{}', ...options], { DATABASE_URL: db.url });
    expect(code).toBe(1);
    expect(text).toContain(`herald: ${message}`);
    expect(text).not.toMatch(/violates|constraint|null value/);
    expect((await db.queue.list({})).jobs).toEqual([]);
  });

  it('refuses a bad kind and a payload that is not JSON', async () => {
    expect((await herald(['enqueue', 'bad kind'], { DATABASE_URL: db.url })).text).toContain('herald: kind must be 1-128 characters');
    expect((await herald(['enqueue', 'echo', '{nope'], { DATABASE_URL: db.url })).text).toContain('herald: payload is not valid JSON');
    expect((await db.queue.list({})).jobs).toEqual([]);
  });

  it('enqueues with every option and prints the job', async () => {
    const { code, lines } = await herald(
      ['enqueue', 'echo', '{"a":1}', '--queue', 'cli', '--priority', '-3', '--max-attempts', '2', '--run-at', '2030-01-01T00:00:00Z',
        '--idempotency-key', 'k1', '--group', 'g', '--tags', 'x,y', '--requires', 'gpu', '--timeout-ms', '500', '--expire-at', '2031-01-01T00:00:00Z'],
      { DATABASE_URL: db.url },
    );
    expect(code).toBe(0);
    const printed = lines.find((l) => l.kind === 'echo');
    expect(printed).toMatchObject({
      queue: 'cli', payload: { a: 1 }, priority: -3, maxAttempts: 2, runAt: '2030-01-01T00:00:00.000Z', idempotencyKey: 'k1',
      group: 'g', tags: ['x', 'y'], requires: ['gpu'], timeoutMs: 500, expireAt: '2031-01-01T00:00:00.000Z',
    });
    expect((await db.queue.get(String(printed!.id)))?.priority).toBe(-3);
  });
});
