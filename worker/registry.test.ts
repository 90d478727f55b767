// The worker's registry row against real PostgreSQL: a refresh asked for after a reconnect (the
// liveness key changed) while another refresh is in flight runs after it, so the row ends up with
// the new key rather than the one the earlier refresh read.
import { expect, it } from 'vitest';
import { pino } from 'pino';
import { useTestDatabase } from '../test/support/db.ts';
import { waitFor } from '../test/support/wait.ts';
import { Db } from '../queue/services/db.ts';
import { RegistryService } from '../queue/services/registry.ts';
import { Registry } from './registry.ts';

const db = useTestDatabase();

// Catches: refresh() returning while one is in flight (`if (this.inFlight) return;` in registry.ts).
it('a refresh asked for while one is in flight runs after it, with the key held then', async () => {
  let key = 1001;
  const registry = new Registry({
    registry: new RegistryService(new Db(db.pool)),
    logger: pino({ level: 'silent' }),
    id: 'reg:1:aaaaaa',
    queues: null,
    kinds: [],
    capabilities: [],
    concurrency: 1,
    lockKey: () => key,
    // No periodic refresh during the test: only the two asked for below write the row.
    heartbeatMs: 3_600_000,
  });
  await registry.start();
  const holder = await db.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM herald.workers WHERE id = 'reg:1:aaaaaa' FOR UPDATE`);
    const { rows: [{ pid }] } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // A refresh (the periodic one, say) reads key 1001 and waits for the row.
    registry.refresh();
    await waitFor(async () => {
      const { rows } = await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid]);
      return rows.length === 1;
    }, { what: 'the first refresh to wait for the held row' });
    // The listener reconnects with a new key and asks for a refresh while the first is in flight.
    key = 1002;
    registry.refresh();
    await holder.query('COMMIT');
  } finally {
    holder.release();
  }
  await waitFor(async () => {
    const { rows } = await db.pool.query(`SELECT lock_key FROM herald.workers WHERE id = 'reg:1:aaaaaa'`);
    return rows[0].lock_key === 1002;
  }, { what: 'the row to record the new key' });
  await registry.stop();
  expect((await db.pool.query(`SELECT count(*)::int AS n FROM herald.workers`)).rows[0].n).toBe(0);
});
