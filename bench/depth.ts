// `npm run bench -- --depth`: what one claim of 16 plus its completion costs with 1k, 100k and 1M
// jobs queued and as many finished beside them. The claim must walk its index and stop, so the
// cost should not grow with the backlog. Each depth gets a fresh database; after a warm-up
// (prepared statements, the plan cache settling on its generic plan) each round is timed alone
// and 16 new jobs replace the claimed ones, untimed, so the depth stays put.
import { createPool, withSessionSetting } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import { seedBacklog } from './backlog.ts';
import { median } from './peers/harness.ts';

export const DEPTHS = [1_000, 100_000, 1_000_000];
const CLAIM = 16;
const WARMUP = 8;
const ROUNDS = 40;
const WORKER = 'bench:depth:1';


/** Median ms of one claim of 16 + its completion, at `depth` queued and `depth` finished jobs. */
export async function claimCost(databaseUrl: string, depth: number, say: (line: string) => void): Promise<number> {
  await migrate(databaseUrl);
  // No fsync wait per commit (as with HERALD_ASYNC_COMMIT=1): this measures the statements, not the disk.
  const pool = createPool(withSessionSetting(databaseUrl, 'synchronous_commit', 'off'), { max: 1, applicationName: 'herald:bench-depth' });
  const queue = new Queue(pool);
  try {
    const t0 = performance.now();
    await seedBacklog(pool, { queued: depth, finished: depth });
    say(`  depth ${depth}: seeded in ${Math.round((performance.now() - t0) / 1000)} s`);
    const times: number[] = [];
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      const t = performance.now();
      const jobs = await queue.claim({ worker: WORKER, kinds: ['noop'], limit: CLAIM });
      const lost = await queue.complete(WORKER, jobs.map((j) => ({ id: j.id, attempt: j.attempt, result: null })));
      const ms = performance.now() - t;
      if (jobs.length !== CLAIM || lost.length) throw new Error(`depth ${depth}: claimed ${jobs.length}, lost ${lost.length}`);
      if (round >= WARMUP) times.push(ms);
      await queue.enqueueMany(Array.from({ length: CLAIM }, () => ({ kind: 'noop' })));
    }
    return median(times);
  } finally {
    await pool.end();
  }
}
