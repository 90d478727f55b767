// Where one job's enqueue→start latency goes: jobs enqueued one at a time, `INTERVAL_MS` apart
// (as `npm run bench`'s latency probe sends them), to the real worker runtime in this process,
// with each stage's time since the enqueue began: the producer's INSERT and commit returned, the
// worker heard the notification, sent the wake-up barrier and the claim (one round trip,
// pipelined), got the barrier's answer, got the claim's, and the handler started. Medians.
// It also times a trivial statement sent right after another and sent after `INTERVAL_MS` idle:
// what waking an idle backend and client costs on this machine, which each stage above pays.
//   node bin/run-ts.js bench/latency-stages.ts [JOBS] [INTERVAL_MS]   (defaults 300, 10)
// The stages are read by wrapping the worker's claimer and work service, which are private to it:
// a bench-only look inside, kept to method names that the claim path calls through `this`.
import { setTimeout as sleep } from 'node:timers/promises';
import { createPool } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import type { WorkService } from '../queue/services/work.ts';
import { startWorker } from '../worker/index.ts';
import { CONCURRENCY, dropBenchDatabase, freshBenchDatabase, median, withClient } from './peers/harness.ts';

const JOBS = Number(process.argv[2] ?? 300);
const INTERVAL_MS = Number(process.argv[3] ?? 10);
/** The first jobs warm the connections and the cached plans: not counted. */
const WARMUP = 50;
const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const STAGES = ['enqueue returned', 'notification heard', 'barrier + claim sent', 'barrier passed', 'claim returned', 'handler started'] as const;
type Stage = (typeof STAGES)[number];

/** What this bench wraps inside a running worker. */
interface WorkerInsides {
  claimer: { wake(reason: string): void };
  work: Pick<WorkService, 'passQueueBarriers' | 'claimAfterBarriers'>;
}

/** Stage times (ms since its enqueue began) of the job in flight; one job at a time. */
class Stages {
  readonly rows: Partial<Record<Stage, number>>[] = [];
  private t0 = 0;
  private current?: Partial<Record<Stage, number>>;

  begin(): void {
    this.t0 = performance.now();
    this.current = {};
    this.rows.push(this.current);
  }

  /** The first time this stage is reached for the job in flight. */
  mark(stage: Stage): void {
    if (this.current && this.current[stage] === undefined) this.current[stage] = performance.now() - this.t0;
  }
}

function wrap(w: WorkerInsides, stages: Stages): void {
  const { claimer, work } = w;
  const wake = claimer.wake.bind(claimer);
  claimer.wake = (reason) => {
    stages.mark('notification heard');
    wake(reason);
  };
  const pass = work.passQueueBarriers.bind(work);
  work.passQueueBarriers = async (...args) => {
    const passed = await pass(...args);
    stages.mark('barrier passed');
    return passed;
  };
  const claim = work.claimAfterBarriers.bind(work);
  work.claimAfterBarriers = async (...args) => {
    stages.mark('barrier + claim sent');
    const got = await claim(...args);
    stages.mark('claim returned');
    return got;
  };
}

/** A trivial statement's round trip, sent right after the last one (busy) or after `idleMs`. */
async function roundTrip(url: string, idleMs: number): Promise<number> {
  return withClient(url, async (client) => {
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      if (idleMs > 0) await sleep(idleMs);
      const t = performance.now();
      await client.query('SELECT 1');
      times.push(performance.now() - t);
    }
    return median(times.slice(20));
  });
}

const url = await freshBenchDatabase(base, 'latency_stages');
await migrate(url);
const pool = createPool(url, { max: 1, applicationName: 'herald:bench-producer' });
const queue = new Queue(pool);
const stages = new Stages();
const worker = await startWorker({ databaseUrl: url, concurrency: CONCURRENCY, tasks: { noop: async () => stages.mark('handler started') } });
wrap(worker as unknown as WorkerInsides, stages);
try {
  for (let i = 0; i < JOBS; i++) {
    stages.begin();
    await queue.enqueue({ kind: 'noop', payload: {} });
    stages.mark('enqueue returned');
    await sleep(INTERVAL_MS);
  }
} finally {
  await worker.stop();
  await pool.end();
}

const rows = stages.rows.slice(WARMUP);
console.log(`latency-stages: ${rows.length} jobs, ${INTERVAL_MS} ms apart; medians in ms since the enqueue began (how many jobs reached the stage)`);
for (const s of STAGES) {
  const at = rows.flatMap((r) => (r[s] === undefined ? [] : [r[s]]));
  console.log(`${s.padEnd(24)} ${at.length ? median(at).toFixed(2) : '-'} (${at.length})`);
}
console.log(`${'SELECT 1, busy'.padEnd(24)} ${(await roundTrip(url, 0)).toFixed(2)}`);
console.log(`${`SELECT 1, ${INTERVAL_MS} ms idle`.padEnd(24)} ${(await roundTrip(url, INTERVAL_MS)).toFixed(2)}`);
await dropBenchDatabase(base, 'latency_stages');
