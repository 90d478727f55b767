// The load test's producer, in its own process so that it does not compete for a core with the
// 1,000 SSE clients it is measuring. It enqueues JOBS_PER_S jobs/s over HTTP for SECONDS: half as
// single POST /api/jobs, half as POST /api/jobs/batch of 10 (as busy producers do), spread over
// QUEUES queues, and prints one JSON line with both autocannon results.
//   node bin/run-ts.js test/system/load-driver.ts URL JOBS_PER_S SECONDS QUEUES
import autocannon from 'autocannon';

const [url, jobsPerSecond, seconds, queues] = process.argv.slice(2).map((v, i) => (i === 0 ? v : Number(v))) as [string, number, number, number];
const BATCH = 10;
let n = 0;
const job = () => ({ kind: 'echo', queue: `load-${n++ % queues}`, payload: { n } });

const run = (path: string, rate: number, body: () => unknown) =>
  autocannon({
    url,
    connections: 128,
    overallRate: rate,
    duration: seconds,
    requests: [{ method: 'POST', path, headers: { 'content-type': 'application/json' }, setupRequest: (req) => ({ ...req, body: JSON.stringify(body()) }) }],
  });

const [single, batch] = await Promise.all([
  run('/api/jobs', jobsPerSecond / 2, job),
  run('/api/jobs/batch', jobsPerSecond / 2 / BATCH, () => ({ jobs: Array.from({ length: BATCH }, job) })),
]);
const summary = (r: Awaited<ReturnType<typeof autocannon>>) => ({
  requests: r.requests.total,
  perSecond: Math.round(r.requests.average),
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  fivexx: r['5xx'],
  p50: r.latency.p50,
  p99: r.latency.p99,
});
process.stdout.write(`${JSON.stringify({ single: summary(single), batch: summary(batch) })}\n`);
