// `npm run bench -- --counts [--json]`: the replies that count jobs, and listings that match
// nothing, at a million jobs in 100 queues. One database (herald_bench_counts), filled through the
// triggers with a mix of every status (ready and scheduled queued jobs among them), then the median
// of 7 in-process requests (Fastify inject: the route, its schema and the database) for each of:
// GET /api/queues (what the board's overview loads), a PATCH /api/queues/:name reply, a /metrics
// scrape, and GET /api/jobs filtered by status or kind with no match.
// BENCH_COUNTS_JOBS changes the size (default 1,000,000).
import { pino } from 'pino';
import pg from 'pg';
import { migrate } from '../queue/migrate.ts';
import { createServer } from '../server/index.ts';
import { median } from './peers/harness.ts';

const round1 = (x: number) => Math.round(x * 10) / 10;

// Job i: queue q00…q99 (i % 100), kind k0…k6; its status from i / 100, so every queue holds
// every status. Failed jobs are only in q00…q49, so `?queue=q77&status=failed` matches nothing;
// no job is blocked and no kind is `nomatch`.
const FILL = `
INSERT INTO herald.jobs (kind, queue, status, attempt, max_attempts, available_at, started_at, finished_at,
                         locked_by, lease_expires_at, last_error, created_at)
SELECT 'k' || (i % 7), 'q' || lpad((i % 100)::text, 2, '0'), s.status::herald.job_status,
       CASE WHEN s.status = 'queued' THEN 0 ELSE 1 END, 3,
       CASE WHEN s.scheduled THEN now() + make_interval(mins => 1 + i % 600) ELSE now() END,
       CASE WHEN s.status IN ('queued') THEN NULL ELSE now() END,
       CASE WHEN s.status IN ('succeeded', 'failed', 'cancelled') THEN now() END,
       CASE WHEN s.status = 'running' THEN 'bench:1:w' END,
       CASE WHEN s.status = 'running' THEN now() + interval '1 day' END,
       CASE WHEN s.status = 'failed' THEN jsonb_build_object('message', 'boom') END,
       now() - make_interval(secs => ($2::int - i) * 0.1)
FROM generate_series($1::int, least($1::int + 49999, $2::int - 1)) i,
LATERAL (SELECT CASE WHEN r < 80 THEN 'succeeded'
                     WHEN r < 84 THEN CASE WHEN i % 100 < 50 THEN 'failed' ELSE 'succeeded' END
                     WHEN r < 86 THEN 'cancelled'
                     WHEN r < 95 THEN 'queued'
                     ELSE 'running' END AS status,
                r BETWEEN 92 AND 94 AS scheduled
         FROM (SELECT (i / 100) % 100 AS r) x) s`;

const LISTINGS: Record<string, string> = {
  queueStatusNoMatch: 'queue=q77&status=failed',
  statusNoMatch: 'status=blocked',
  kindNoMatch: 'kind=nomatch',
  queueKindNoMatch: 'queue=q77&kind=nomatch',
  statusKindNoMatch: 'status=failed&kind=nomatch',
  queueStatusMatch: 'queue=q77&status=running',
};

export async function countsBench(url: string, say: (line: string) => void): Promise<Record<string, unknown>> {
  const size = Number(process.env.BENCH_COUNTS_JOBS ?? 1_000_000);
  await migrate(url);
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    say(`  filling ${size.toLocaleString('en-US')} jobs in 100 queues…`);
    for (let from = 0; from < size; from += 50_000) await pool.query(FILL, [from, size]);
    await pool.query('VACUUM ANALYZE herald.jobs');
  } finally {
    await pool.end();
  }
  const server = await createServer({ databaseUrl: url, logger: pino({ level: 'silent' }), historyEveryMs: 3_600_000 });
  try {
    const timeMs = async (method: 'GET' | 'PATCH', path: string, body?: object, runs = 7): Promise<number> => {
      const xs: number[] = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const res = await server.app.inject({ method, url: path, payload: body });
        xs.push(performance.now() - t0);
        if (res.statusCode !== 200) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      }
      return round1(median(xs));
    };
    const replies: Record<string, number> = {
      queues: await timeMs('GET', '/api/queues'),
      patchQueue: await timeMs('PATCH', '/api/queues/q07', { paused: false }),
      metrics: await timeMs('GET', '/metrics'),
    };
    for (const [name, ms] of Object.entries(replies)) say(`  ${name.padEnd(20)} ${ms} ms`);
    const listMs: Record<string, number> = {};
    for (const [name, query] of Object.entries(LISTINGS)) {
      listMs[name] = await timeMs('GET', `/api/jobs?${query}&limit=50`);
      say(`  list ${name.padEnd(18)} ${listMs[name]} ms  (${query})`);
    }
    return { jobs: size, queues: 100, replyMs: replies, listMs };
  } finally {
    await server.stop();
  }
}
