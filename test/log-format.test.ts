// Logs a person can read: pretty at a terminal, JSON lines for collectors, HERALD_LOG_FORMAT to choose.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../queue/config.ts';
import { chooseLogFormat } from '../queue/log.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'herald.js');
const run = promisify(execFile);

describe('chooseLogFormat', () => {
  it('is pretty at a terminal and JSON otherwise, unless set', () => {
    expect(chooseLogFormat('auto', true)).toBe('pretty');
    expect(chooseLogFormat('auto', false)).toBe('json');
    expect(chooseLogFormat('json', true)).toBe('json');
    expect(chooseLogFormat('pretty', false)).toBe('pretty');
  });
});

describe('HERALD_LOG_FORMAT', () => {
  const withEnv = (value: string | undefined, fn: () => void) => {
    const before = process.env.HERALD_LOG_FORMAT;
    if (value === undefined) delete process.env.HERALD_LOG_FORMAT;
    else process.env.HERALD_LOG_FORMAT = value;
    try {
      fn();
    } finally {
      if (before === undefined) delete process.env.HERALD_LOG_FORMAT;
      else process.env.HERALD_LOG_FORMAT = before;
    }
  };

  it('defaults to auto and takes pretty or json', () => {
    withEnv(undefined, () => expect(loadConfig().logFormat).toBe('auto'));
    withEnv('pretty', () => expect(loadConfig().logFormat).toBe('pretty'));
    withEnv('json', () => expect(loadConfig().logFormat).toBe('json'));
  });

  it('refuses anything else with a message that names the choices', () => {
    withEnv('yaml', () => expect(() => loadConfig()).toThrow('HERALD_LOG_FORMAT must be one of auto, pretty, json, got "yaml"'));
  });

  describe('in a herald process', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase();
    });
    afterAll(() => db.drop());

    const migrate = (format: string) =>
      run(process.execPath, [BIN, 'migrate'], {
        env: { ...process.env, DATABASE_URL: db.url, HERALD_LOG_LEVEL: 'info', HERALD_LOG_FORMAT: format },
      });

    it('json: one JSON object per line', async () => {
      const { stdout } = await migrate('json');
      const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
      expect(lines).toContainEqual(expect.objectContaining({ level: 30, name: 'herald', msg: 'migrations applied' }));
    });

    it('pretty: readable lines with time, level and message, even when stdout is not a terminal', async () => {
      const { stdout } = await migrate('pretty');
      expect(stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(herald\): migrations applied$/m);
      expect(stdout).not.toContain('{"level"');
    });

    it('an invalid value stops the process with that message', async () => {
      const failed = await migrate('yaml').then(() => null, (err: { code: number; stderr: string }) => err);
      expect(failed?.code).toBe(1);
      expect(failed?.stderr).toContain('HERALD_LOG_FORMAT must be one of auto, pretty, json, got "yaml"');
    });
  });
});
