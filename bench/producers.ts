// `npm run bench -- --producers`: many sessions inserting one job per statement over SQL, into
// herald.jobs (its triggers write the `enqueued` events and send the NOTIFYs) against a table of
// the same columns, checks and indexes with no trigger. PostgreSQL serialises the commits of
// every transaction that sent a NOTIFY, so this measures what the wake-ups cost producers.
// Sizes: BENCH_PRODUCERS (64) sessions, BENCH_PRODUCER_SECONDS (5) per run.
import pg from 'pg';
import { migrate } from '../queue/migrate.ts';
import { withClient } from './peers/harness.ts';

const PLAIN = 'bench_plain.jobs';
const TABLES = { herald: 'herald.jobs', plain: PLAIN } as const;
type Target = keyof typeof TABLES;

export async function setupProducers(databaseUrl: string): Promise<void> {
  await migrate(databaseUrl);
  await withClient(databaseUrl, (c) =>
    c.query(`DROP SCHEMA IF EXISTS bench_plain CASCADE; CREATE SCHEMA bench_plain;
      CREATE TABLE ${PLAIN} (LIKE herald.jobs INCLUDING ALL)`),
  );
}

/** Inserts/s of `sessions` connections each inserting single jobs into `target` for `seconds`. */
export async function producerRate(databaseUrl: string, target: Target, sessions: number, seconds: number): Promise<number> {
  const clients = Array.from({ length: sessions }, () => new pg.Client({ connectionString: databaseUrl }));
  await Promise.all(clients.map((c) => c.connect()));
  const sql = `INSERT INTO ${TABLES[target]} (queue, kind, payload) VALUES ('default', 'noop', '{}')`;
  try {
    let inserted = 0;
    const t0 = performance.now();
    const until = t0 + seconds * 1000;
    await Promise.all(clients.map(async (c) => {
      while (performance.now() < until) {
        await c.query(sql);
        inserted++;
      }
    }));
    return inserted / ((performance.now() - t0) / 1000);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
    await withClient(databaseUrl, (c) => c.query(`TRUNCATE ${TABLES[target]}`));
  }
}
