// Per-test-file database: a clone of the migrated template, dropped afterwards.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { Queue, type QueueOptions } from '../../queue/queue.ts';
import { createPool, withDatabase } from '../../queue/database.ts';

export interface TestDatabase {
  url: string;
  name: string;
  pool: pg.Pool;
  queue: Queue;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

export async function createTestDatabase(opts: QueueOptions & { poolSize?: number } = {}): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  const template = inject('pgTemplate');
  // The parent pid ties leftovers to the run that made them (global-setup cleans them up).
  const name = `herald_t_${process.ppid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  await admin.end();
  const url = withDatabase(adminUrl, name);
  const pool = createPool(url, { max: opts.poolSize ?? 10 });
  const queue = new Queue(pool, opts);
  return {
    url,
    name,
    pool,
    queue,
    async drop() {
      await pool.end();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
