import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { startServer } from '../server/index.ts';
import { connectSse } from './server-sse-latency.ts';
const url0 = process.env.URL!;
const s = await startServer({ databaseUrl: url0, port: 0 });
const marks: Record<string, number[]> = { resp: [], notify: [], published: [], client: [] };
let t0 = 0;
s.hub.listener.on('notification', () => marks.notify.push(performance.now() - t0));
s.hub.fanout.observe(() => marks.published.push(performance.now() - t0));
await connectSse(s.url, () => marks.client.push(performance.now() - t0));
const agent = new http.Agent({ keepAlive: true });
for (let i = 0; i < 60; i++) {
  await new Promise((r) => setTimeout(r, 100));
  t0 = performance.now();
  await new Promise<void>((resolve) => {
    const req = http.request(`${s.url}/api/jobs`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => { res.resume(); res.on('end', () => { marks.resp.push(performance.now() - t0); resolve(); }); });
    req.end('{"kind":"echo"}');
  });
}
await new Promise((r) => setTimeout(r, 500));
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)].toFixed(2);
for (const [k, v] of Object.entries(marks)) console.log(k, 'p50', med(v), 'n', v.length);
agent.destroy();
await s.stop();
