// Applies drizzle/ (the generated tables and the hand-written triggers). Idempotent, and safe
// when several processes start at once: they queue on one advisory lock.
//
// Migrations only grow: a landed file is never edited, since drizzle applies only journal
// entries newer than the last one a database has, so an edit never reaches a database
// migrated before it. A change is a new migration (`npx drizzle-kit generate --name X`, or
// `--custom` for functions and triggers).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate as drizzleMigrate } from 'drizzle-orm/node-postgres/migrator';
import { LOCK_NAMESPACE, MIGRATE_KEY } from './locks.ts';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'drizzle');

/** `folder`: another migration set (the upgrade test applies an old one first). */
export async function migrate(url: string, folder = MIGRATIONS_DIR): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'herald:migrate' });
  await client.connect();
  try {
    await client.query('SET client_min_messages = warning');
    await client.query('SELECT pg_advisory_lock($1, $2)', [LOCK_NAMESPACE, MIGRATE_KEY]);
    await drizzleMigrate(drizzle(client), {
      migrationsFolder: folder,
      // drizzle's bookkeeping stays in its own schema: 0000 creates schema herald itself.
      migrationsSchema: 'drizzle',
    });
  } finally {
    await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_NAMESPACE, MIGRATE_KEY]).catch(() => {});
    await client.end();
  }
}
