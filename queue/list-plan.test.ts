// The listing's plan, not its speed: filtered by status or kind (with or without a queue), a
// filter that matches nothing is answered by index probes that find nothing. No job row is read
// and thrown away, however many jobs the table holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { filterValues, type JobFilter } from './search.ts';
import { listJobs } from './sql/search.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 2 });
  // 20,000 jobs in 20 queues (q0…q19), kinds k0…k4, every queue with every status but two:
  // only q0…q9 have failed jobs, and no job is blocked.
  await db.pool.query(`
    INSERT INTO herald.jobs (kind, queue, status, attempt, started_at, finished_at, locked_by, lease_expires_at)
    SELECT 'k' || (i % 5), 'q' || (i % 20), s.status::herald.job_status, CASE WHEN s.status = 'queued' THEN 0 ELSE 1 END,
           CASE WHEN s.status <> 'queued' THEN now() END,
           CASE WHEN s.status IN ('succeeded', 'failed', 'cancelled') THEN now() END,
           CASE WHEN s.status = 'running' THEN 'w:1:x' END, CASE WHEN s.status = 'running' THEN now() + interval '1 hour' END
    FROM generate_series(0, 19999) i,
    LATERAL (SELECT CASE WHEN (i / 20) % 10 < 6 THEN 'succeeded'
                         WHEN (i / 20) % 10 = 6 THEN CASE WHEN i % 20 < 10 THEN 'failed' ELSE 'succeeded' END
                         WHEN (i / 20) % 10 = 7 THEN 'cancelled'
                         WHEN (i / 20) % 10 = 8 THEN 'queued'
                         ELSE 'running' END AS status) s`);
  await db.pool.query('ANALYZE herald.jobs');
});
afterAll(() => db.drop());

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}
const planNodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(planNodes)];

/** The executed nodes that read herald.jobs or one of its indexes, for a first page as GET /api/jobs asks it. */
async function jobReads(filter: JobFilter): Promise<PlanNode[]> {
  const { rows } = await db.pool.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${listJobs.text}`, [...filterValues(filter), null, 51, null]);
  return planNodes(rows[0]['QUERY PLAN'][0].Plan).filter(
    (n) => n['Actual Loops'] > 0 && (n['Relation Name'] === 'jobs' || n['Index Name']?.startsWith('jobs_')),
  );
}

describe('a listing that matches nothing', () => {
  const filters: Record<string, JobFilter> = {
    'a status absent from a queue': { queue: 'q15', status: 'failed' },
    'a status no job has': { status: 'blocked' },
    'a kind no job has': { kind: 'nomatch' },
    'a kind absent from a queue': { queue: 'q15', kind: 'nomatch' },
    'a status and a kind': { status: 'failed', kind: 'nomatch' },
    'scheduled in a queue': { queue: 'q15', status: 'scheduled' },
    // Its 2,000 queued jobs wait for nothing: the jobs_waiting index holds none of them.
    // Mutation caught: filterValues leaving the status null for waitingFor (every queued row read).
    'waiting for a signal': { waitingFor: 'signal' },
    'sleeping in a queue': { queue: 'q15', waitingFor: 'sleep' },
  };
  for (const [name, filter] of Object.entries(filters)) {
    it(`probes an index and reads no job: ${name}`, async () => {
      const reads = await jobReads(filter);
      expect(reads.length).toBeGreaterThan(0);
      for (const n of reads) {
        expect(n['Node Type']).not.toBe('Seq Scan');
        expect({ node: n['Node Type'], rows: n['Actual Rows'], removed: (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0) })
          .toEqual({ node: n['Node Type'], rows: 0, removed: 0 });
      }
    });
  }

  it('while the same filters with matches still list them, newest first', async () => {
    const { rows } = await db.pool.query(listJobs.text, [...filterValues({ queue: 'q5', status: 'failed' }), null, 51, null]);
    expect(rows).toHaveLength(51);
    expect(rows.every((r) => r.queue === 'q5' && r.status === 'failed')).toBe(true);
    expect(rows.map((r) => BigInt(r.id))).toEqual(rows.map((r) => BigInt(r.id)).sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));
  });
});
