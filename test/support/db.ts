// Per-test-file database: a clone of the migrated template, dropped afterwards.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
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

type TestDatabaseOptions = QueueOptions & { poolSize?: number };

/** The handle, before its database exists: the pool connects on first use, so create() must come first. */
function testDatabase(opts: TestDatabaseOptions): TestDatabase & { create(): Promise<void> } {
  const adminUrl = inject('pgAdminUrl');
  // The parent pid ties leftovers to the run that made them (global-setup cleans them up).
  const name = `herald_t_${process.ppid}_${randomBytes(4).toString('hex')}`;
  const url = withDatabase(adminUrl, name);
  const pool = createPool(url, { max: opts.poolSize ?? 10 });
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  return {
    url,
    name,
    pool,
    queue: new Queue(pool, opts),
    create: () => admin(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`),
    async drop() {
      await pool.end();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** Lets new sessions into a test database, or shuts them out (open ones stay); an outage's stand-in. */
export async function allowConnections(db: TestDatabase, allow: boolean): Promise<void> {
  const c = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await c.connect();
  try {
    await c.query(`ALTER DATABASE ${db.name} WITH ALLOW_CONNECTIONS ${allow}`);
  } finally {
    await c.end();
  }
}

export async function createTestDatabase(opts: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const db = testDatabase(opts);
  await db.create();
  return db;
}

/**
 * The test file's database, created before its tests and dropped after them (so hooks a file adds
 * later run after the create and before the drop). `truncate`: tables emptied before each test,
 * their identities restarted.
 */
export function useTestDatabase(opts: TestDatabaseOptions = {}, { truncate }: { truncate?: string[] } = {}): TestDatabase {
  const db = testDatabase(opts);
  beforeAll(() => db.create());
  afterAll(() => db.drop());
  if (truncate) {
    beforeEach(async () => {
      await db.pool.query(`TRUNCATE ${truncate.join(', ')} RESTART IDENTITY`);
    });
  }
  return db;
}
