// `node bin/run-ts.js bench/waiting.ts`: what the enqueue reply's waitingFor costs where it is
// dearest: a batch of 1,000 jobs into a rate-limited queue with 100,000 starts in its window and
// a concurrency limit with running jobs, median of 7 batches. Each limit is counted once per
// queue of the batch, not once per job. BENCH_WINDOW_STARTS changes the window (100,000).
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { benchDatabase } from './server-support.ts';

const starts = Number(process.env.BENCH_WINDOW_STARTS ?? 100_000);
const db = await benchDatabase('herald_bench_waiting');
const pool = createPool(db.url, { max: 2, applicationName: 'herald:bench-waiting' });
const queue = new Queue(pool);
// A live worker for kind k (else every job waits for no_worker and no limit is counted).
const register = () => queue.registerWorker({ id: 'bench:1:a', host: 'bench', pid: 1, queues: null, kinds: ['k'], capabilities: [], concurrency: 1, lockKey: null });
await queue.patchQueue('rated', { rateLimit: { count: 100_000, periodMs: 3_600_000 }, concurrency: 10_000 });
await pool.query(`INSERT INTO herald.queue_starts (queue, at) SELECT 'rated', now() - (i % 1000) * interval '1 ms' FROM generate_series(1, $1::int) i`, [starts]);
await pool.query('ANALYZE herald.queue_starts');
const times: number[] = [];
let reason: string | null = null;
for (let round = 0; round < 7; round++) {
  await register();
  const t0 = performance.now();
  const done = await queue.enqueueMany(Array.from({ length: 1000 }, (_, i) => ({ kind: 'k', queue: 'rated', group: `g${i % 10}` })));
  times.push(performance.now() - t0);
  reason = done[0].job.waitingFor;
}
times.sort((a, b) => a - b);
console.log(
  `enqueue of 1,000 jobs into a queue with ${starts.toLocaleString('en-US')} starts in its window: ` +
    `median ${times[3].toFixed(1)} ms (min ${times[0].toFixed(1)}, max ${times[6].toFixed(1)}); waitingFor ${reason}`,
);
await pool.end();
await db.close();
