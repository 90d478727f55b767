// `node bin/run-ts.js bench/stream-replay.ts`: a replay from lastEventId=0 over many events, with
// the server in its own process: its resident memory while a client reads the whole history.
// The replay reads the feed a page at a time and waits for the socket before the next page, so
// the server's memory should not grow with the history. BENCH_REPLAY_EVENTS (default 1,000,000).
import http from 'node:http';
import pg from 'pg';
import { benchDatabase, spawnServer } from './server-support.ts';

const events = Number(process.env.BENCH_REPLAY_EVENTS ?? 1_000_000);
const db = await benchDatabase('herald_bench_replay');
const c = new pg.Client({ connectionString: db.url });
await c.connect();
// Written straight into the log (no jobs needed for a replay), in one transaction per chunk.
for (let from = 0; from < events; from += 100_000) {
  await c.query(
    `INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, data)
     SELECT i, 'q' || (i % 10), 'bench', 'progress', 'running', 1, jsonb_build_object('percent', i % 100, 'message', 'item ' || i)
     FROM generate_series($1::bigint, $2::bigint) i`,
    [from + 1, Math.min(events, from + 100_000)],
  );
}
await c.end();
const server = await spawnServer(db.url);
const before = server.rssMb();
let peak = before;
const sampler = setInterval(() => (peak = Math.max(peak, server.rssMb())), 100);
const t0 = performance.now();
const received = await new Promise<number>((resolve, reject) => {
  let n = 0;
  let tail = '';
  http
    .get(`${server.url}/api/events?lastEventId=0`, { headers: { accept: 'text/event-stream' } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const text = tail + chunk;
        const parts = text.split('\nevent: job\n');
        n += parts.length - 1;
        tail = parts[parts.length - 1].slice(-16);
        if (n >= events) {
          res.destroy();
          resolve(n);
        }
      });
      res.on('error', reject);
    })
    .on('error', reject);
});
clearInterval(sampler);
const seconds = (performance.now() - t0) / 1000;
console.log(
  `replayed ${received.toLocaleString('en-US')} events in ${seconds.toFixed(1)} s (${Math.round(received / seconds).toLocaleString('en-US')}/s); ` +
    `server RSS ${before} MiB before, ${peak} MiB at peak, ${server.rssMb()} MiB after`,
);
await server.stop();
await db.close();
