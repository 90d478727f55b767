// The pool a process runs on: a connection that dies while checked out must not end the process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { terminateSession } from '../test/support/sessions.ts';
import { createPool } from './database.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

describe('createPool', () => {
  it('survives a connection that dies while checked out between two statements; its next statement fails, and the pool goes on', async () => {
    const pool = createPool(db.url, { max: 2, applicationName: 'herald:pool-test' });
    try {
      const client = await pool.connect();
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // Idle between statements, as a transaction is while its caller awaits something else.
      // The server's FATAL and the closed socket reach the client while it runs nothing: an
      // 'error' event nobody but createPool listens to (without it, an uncaught exception).
      await terminateSession(db.pool, rows[0].pid);
      await expect(client.query('SELECT 1')).rejects.toThrow();
      client.release(true);
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
