// `npm run bench -- --flows [--json]`: what workflows cost, on one fresh database (herald_bench_flows):
//   1. creation: a 1,000-job flow (1 → 998 → 1, 1,996 edges) through Queue.createFlow, median ms;
//   2. fan-in: 300 parents → 1 child, BENCH_FLOW_FANINS (20) times; the child's start after its
//      last parent ended: started_at of the child − the latest finished_at of its parents;
//   3. chain: a 1,000-deep chain; the same gap for each of its 999 links.
// Both gaps are read off the database's own clock (now() of the finishing transaction, the
// claim's statement_timestamp()): commit, wake-up, claim. A real worker (16 slots) with a no-op
// task runs the jobs.
import type pg from 'pg';
import { createPool } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import { startWorker } from '../worker/index.ts';
import { CONCURRENCY, median, withClient } from './peers/harness.ts';
import { percentiles, type Percentiles } from './peers/stats.ts';

const round1 = (x: number) => Math.round(x * 10) / 10;
const round = (p: Percentiles) => ({ p50: round1(p.p50), p95: round1(p.p95), p99: round1(p.p99) });

/** For each job of flow `flowId` with parents: its start minus its parents' latest finish, in ms. */
async function startGaps(pool: pg.Pool, flowId: string): Promise<number[]> {
  const { rows } = await pool.query<{ gap: number }>(
    `SELECT extract(epoch FROM (c.started_at - max(p.finished_at))) * 1000 AS gap
     FROM herald.jobs c JOIN herald.job_edges e ON e.child = c.id JOIN herald.jobs p ON p.id = e.parent
     WHERE c.flow_id = $1
     GROUP BY c.id, c.started_at`,
    [flowId],
  );
  return rows.map((r) => Number(r.gap));
}

async function finished(pool: pg.Pool, flowId: string): Promise<void> {
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM herald.jobs WHERE flow_id = $1 AND status NOT IN ('succeeded', 'failed', 'cancelled')`,
      [flowId],
    );
    if (rows[0].n === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const job = { kind: 'noop', payload: {} };

export async function flowsBench(url: string, say: (line: string) => void): Promise<Record<string, unknown>> {
  const fanins = Number(process.env.BENCH_FLOW_FANINS ?? 20);
  await migrate(url);
  const pool = createPool(url, { max: 2, applicationName: 'herald:bench-flows' });
  const queue = new Queue(pool);
  try {
    // 1. Creation, with no worker running (the jobs stay; the table grows as it would).
    const wide = [{ ref: 'root', job }, ...Array.from({ length: 998 }, (_, i) => ({ ref: `m${i}`, dependsOn: ['root'], job }))];
    const flow1000 = [...wide, { ref: 'merge', dependsOn: wide.slice(1).map((j) => j.ref), job }];
    const create: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      await queue.createFlow('bench', flow1000);
      create.push(performance.now() - t0);
    }
    say(`  1,000-job flow created in ${round1(median(create))} ms (median of 7)`);
    await withClient(url, (c) => c.query('TRUNCATE herald.jobs, herald.job_events, herald.job_edges, herald.flows; ANALYZE herald.jobs'));

    const w = await startWorker({ databaseUrl: url, concurrency: CONCURRENCY, tasks: { noop: async () => null } });
    try {
      // 2. Fan-in 300 → 1.
      const fanin: number[] = [];
      const parents = Array.from({ length: 300 }, (_, i) => ({ ref: `p${i}`, job }));
      for (let i = 0; i < fanins; i++) {
        const { flow } = await queue.createFlow('fanin', [...parents, { ref: 'child', dependsOn: parents.map((p) => p.ref), job }]);
        await finished(pool, flow.id);
        fanin.push(...(await startGaps(pool, flow.id)));
      }
      const faninP = round(percentiles(fanin));
      say(`  fan-in 300 → 1, child start after the last parent ended: p50 ${faninP.p50} / p99 ${faninP.p99} ms (${fanin.length} flows)`);

      // 3. A 1,000-deep chain.
      const chain = Array.from({ length: 1000 }, (_, i) => ({ ref: `n${i}`, dependsOn: i ? [`n${i - 1}`] : [], job }));
      const t0 = performance.now();
      const { flow } = await queue.createFlow('chain', chain);
      await finished(pool, flow.id);
      const chainMs = performance.now() - t0;
      const chainP = round(percentiles(await startGaps(pool, flow.id)));
      say(`  1,000-deep chain: each link starts p50 ${chainP.p50} / p99 ${chainP.p99} ms after its parent; whole chain ${Math.round(chainMs)} ms`);
      return { createMs: round1(median(create)), faninMs: faninP, chainMs: chainP, chainTotalMs: Math.round(chainMs) };
    } finally {
      await w.stop();
    }
  } finally {
    await pool.end();
  }
}
