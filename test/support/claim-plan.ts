// The claim's plan, not its speed: with statistics in place, it walks jobs_claim_order in order
// and stops at the LIMIT, never sorting the backlog. Checked for the custom plans a prepared
// statement starts with and for the generic plan the plan cache settles on, with and without a
// queue filter. queue/claim-plan.test.ts checks it on a small backlog, the system suite on a deep one.
import type pg from 'pg';
import { expect } from 'vitest';
import { seedBacklog } from '../../bench/backlog.ts';
import { claimJobs } from '../../queue/sql/claim.ts';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function nodes(n: PlanNode): PlanNode[] {
  return [n, ...(n.Plans ?? []).flatMap(nodes)];
}

/** The plan of the claim as the worker runs it (16 jobs, kinds given), under each plan-cache mode. */
async function claimPlans(pool: pg.Pool, queues: string[] | null): Promise<Record<string, PlanNode[]>> {
  const c = await pool.connect();
  try {
    await c.query(`PREPARE claim_plan AS ${claimJobs.claimed.text}`);
    const out: Record<string, PlanNode[]> = {};
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      await c.query(`SET plan_cache_mode = ${mode}`);
      const queueParam = queues ? c.escapeLiteral(`{${queues.join(',')}}`) : 'NULL';
      const { rows } = await c.query(`EXPLAIN (FORMAT JSON) EXECUTE claim_plan(${queueParam}, '{}', 16, 'w:1:x', NULL, 30000, '{noop}')`);
      out[mode] = nodes(rows[0]['QUERY PLAN'][0].Plan);
    }
    return out;
  } finally {
    await c.query('DEALLOCATE ALL');
    await c.query('RESET plan_cache_mode');
    c.release();
  }
}

function expectIndexWalk(plan: PlanNode[]): void {
  const types = plan.map((n) => n['Node Type']);
  expect(types).not.toContain('Sort');
  expect(types).not.toContain('Incremental Sort');
  // The picked rows come off the claim index, in its order, under the LIMIT.
  const walk = plan.find((n) => n['Index Name'] === 'jobs_claim_order');
  expect(walk?.['Node Type']).toBe('Index Scan');
  expect(types.indexOf('Limit')).toBeLessThan(plan.indexOf(walk!));
}

/** Seeds `depth` queued jobs and as many finished ones into an empty database, then checks every plan. */
export async function expectClaimWalksIndexAt(pool: pg.Pool, depth: number): Promise<void> {
  await seedBacklog(pool, { queued: depth, finished: depth });
  const { rows } = await pool.query(`SELECT count(*) FILTER (WHERE status = 'queued')::int AS queued FROM herald.jobs`);
  expect(rows[0].queued).toBe(depth);
  for (const queues of [null, ['default']]) {
    const plans = await claimPlans(pool, queues);
    for (const plan of Object.values(plans)) expectIndexWalk(plan);
  }
}
