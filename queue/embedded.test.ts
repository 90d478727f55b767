// The embedded cluster: reused across runs, and a one-line error for a data dir it cannot use.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbedded, type EmbeddedPostgres } from './embedded.ts';

const dirs: string[] = [];
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-embedded-'));
  fs.chmodSync(d, 0o755);
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

// With DATABASE_URL set the suite covers the external server; the embedded path is tested here anyway,
// because it is what `npm start` uses on a fresh machine.
describe('embedded PostgreSQL', () => {
  it('starts, is joined by a second process instead of started twice, and restarts on the same data', async () => {
    const dir = tempDir();
    const first = await startEmbedded(dir);
    let second: EmbeddedPostgres | undefined;
    try {
      second = await startEmbedded(dir);
      expect(second.reused).toBe(true);
      expect(second.port).toBe(first.port);
      const c = new pg.Client({ connectionString: second.url });
      await c.connect();
      await c.query('CREATE TABLE kept (x int)');
      await c.end();
    } finally {
      await second?.stop();
      await first.stop();
    }
    const again = await startEmbedded(dir);
    try {
      expect(again.reused).toBe(false);
      const c = new pg.Client({ connectionString: again.url });
      await c.connect();
      const { rows } = await c.query(`SELECT to_regclass('kept')::text AS t, current_setting('server_version_num')::int / 10000 AS major`);
      await c.end();
      expect(rows[0]).toEqual({ t: 'kept', major: 18 });
    } finally {
      await again.stop();
    }
  });

  it('refuses a data dir from another PostgreSQL major in one line', async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'pgdata'));
    fs.writeFileSync(path.join(dir, 'pgdata', 'PG_VERSION'), '16\n');
    const err = await startEmbedded(dir).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/PostgreSQL 16 cluster.*embeds PostgreSQL 18/);
    expect((err as Error).message).not.toContain('\n');
  });
});
