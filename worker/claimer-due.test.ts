// A job that becomes runnable while a claim runs is not left to the next poll. The claim can look a
// moment before the job's time (a timer fired early on a busy event loop, or the database's clock
// runs a little behind), and the next-run lookup that follows can look a moment after it: then the
// job is neither claimed nor "scheduled". The lookup reaches back to the claim's start.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { Claimer } from './claimer.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('the next scheduled time after a claim', () => {
  it('counts a job whose time passed within the reach-back, and only then', async () => {
    const { job } = await db.queue.enqueue({ kind: 'k', queue: 'due', runAt: new Date(Date.now() + 3_600_000) });
    // Its time passed 200 ms ago, by the database's clock.
    await db.pool.query(`UPDATE herald.jobs SET available_at = now() - interval '200 ms' WHERE id = $1`, [job.id]);
    const at = (await db.pool.query<{ ms: number }>(`SELECT ceil(extract(epoch FROM available_at) * 1000)::float8 AS ms FROM herald.jobs WHERE id = $1`, [job.id])).rows[0].ms;
    expect(await db.queue.nextRunAt(['due'])).toBeNull();
    expect(await db.queue.nextRunAt(['due'], [], undefined, 100)).toBeNull();
    expect((await db.queue.nextRunAt(['due'], [], undefined, 60_000))?.getTime()).toBe(at);
  });

  it('a claimer whose claim came back empty claims again when the lookup reports a time already past', async () => {
    const claims: number[] = [];
    const reach: number[] = [];
    let claimer!: Claimer;
    const again = new Promise<void>((resolve) => {
      claimer = new Claimer({
        pollMs: 60_000,
        maxBatch: 10,
        logger: pino({ level: 'silent' }),
        freeSlots: () => 1,
        claim: async () => {
          claims.push(Date.now());
          if (claims.length === 2) resolve();
          return 0;
        },
        // What the database answers for a job that became runnable during the first claim: with
        // a reach-back, its (past) time; without one, nothing.
        nextRunAt: async (sinceMs) => {
          reach.push(sinceMs);
          return claims.length === 1 && sinceMs > 0 ? Date.now() - 1 : null;
        },
      });
    });
    try {
      claimer.wake('scheduled');
      await again;
      expect(claims).toHaveLength(2);
      expect(reach[0]).toBeGreaterThan(0);
    } finally {
      await claimer.stop();
    }
  });
});
