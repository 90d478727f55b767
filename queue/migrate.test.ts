// Migrations are idempotent and safe when several processes run them at once.
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { withDatabase } from './database.ts';
import fs from 'node:fs';
import path from 'node:path';
import { MIGRATIONS_DIR, migrate } from './migrate.ts';

// Every migration in drizzle/ is applied once.
const MIGRATIONS = (JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length;

describe('migrate', () => {
  it('applies once when four run at the same time, and again is a no-op', async () => {
    const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await admin.connect();
    const name = `herald_t_${process.ppid}_migrate`;
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
    const url = withDatabase(inject('pgAdminUrl'), name);
    try {
      await Promise.all([migrate(url), migrate(url), migrate(url), migrate(url)]);
      await migrate(url);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const { rows } = await c.query(`
        SELECT (SELECT count(*)::int FROM drizzle.__drizzle_migrations) AS applied,
               (SELECT array_agg(tgname::text ORDER BY tgname) FROM pg_trigger WHERE NOT tgisinternal) AS triggers`);
      await c.end();
      expect(rows[0]).toEqual({ applied: MIGRATIONS, triggers: ['job_events_after_insert', 'jobs_after_insert', 'jobs_after_update'] });
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});
