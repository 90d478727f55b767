// Applies drizzle/ (the generated tables and the hand-written triggers). Idempotent, and safe
// when several processes start at once: they queue on one advisory lock.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate as drizzleMigrate } from 'drizzle-orm/node-postgres/migrator';
import { LOCK_NAMESPACE, MIGRATE_KEY } from './locks.ts';

const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'drizzle');


export async function migrate(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'herald:migrate' });
  await client.connect();
  try {
    await client.query('SET client_min_messages = warning');
    await client.query('SELECT pg_advisory_lock($1, $2)', [LOCK_NAMESPACE, MIGRATE_KEY]);
    await drizzleMigrate(drizzle(client), {
      migrationsFolder: MIGRATIONS_DIR,
      // drizzle's bookkeeping stays in its own schema: 0000 creates schema herald itself.
      migrationsSchema: 'drizzle',
    });
  } finally {
    await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_NAMESPACE, MIGRATE_KEY]).catch(() => {});
    await client.end();
  }
}
