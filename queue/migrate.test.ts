// Migrations are idempotent and safe when several processes run them at once.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { withDatabase } from './database.ts';
import { migrate } from './migrate.ts';

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
      const journal = JSON.parse(readFileSync(new URL('../drizzle/meta/_journal.json', import.meta.url), 'utf8'));
      expect(rows[0].applied).toBe(journal.entries.length);
      expect(rows[0].triggers).toEqual(expect.arrayContaining(['job_events_actor', 'job_events_after_insert', 'jobs_after_insert', 'jobs_after_update']));
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});
