// The board end to end: from a POST sent in the page to the job's row in the DOM, in headless
// Chromium, with 1 and with 1,000 SSE clients connected (the board's own stream plus 999 held by
// client processes of their own, sse-clients.ts).
//   npm run build && node bin/run-ts.js bench/board-latency.ts [--clients 1,1000] [--count 20]
// The jobs table adds rows at most 4 times a second, so each POST waits for a quiet moment first
// (pacing, not part of the figure). Timed in the page: performance.now() before fetch(), and a
// MutationObserver that sees the row (no polling).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { percentiles } from './peers/stats.ts';
import { benchDatabase, spawnServer } from './server-support.ts';
import { spawnClients } from './server-sse-latency.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** In the page: POST a job, resolve when its row is in the DOM; ms from the POST being sent (and from its reply). */
export function postToRow(page: Page, queue: string): Promise<{ id: string; fromSend: number; fromReply: number }> {
  return page.evaluate(async (q) => {
    const sent = performance.now();
    const res = await fetch('/api/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'echo', queue: q }) });
    if (res.status !== 201) throw new Error(`enqueue answered ${res.status}: ${await res.text()}`);
    const job = (await res.json()) as { id: string };
    const replied = performance.now();
    const sel = `[data-testid="job-row-${job.id}"]`;
    return new Promise((resolve, reject) => {
      const done = () => {
        obs.disconnect();
        clearTimeout(timer);
        const now = performance.now();
        resolve({ id: job.id, fromSend: now - sent, fromReply: now - replied });
      };
      const obs = new MutationObserver(() => document.querySelector(sel) && done());
      const timer = setTimeout(() => (obs.disconnect(), reject(new Error(`row ${job.id} did not appear within 20 s`))), 20_000);
      obs.observe(document.body, { childList: true, subtree: true });
      if (document.querySelector(sel)) done();
    });
  }, queue);
}

if (path.resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  const arg = (name: string, fallback: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const counts = arg('clients', '1,1000').split(',').map(Number);
  const samples = Number(arg('count', '20'));
  if (!fs.existsSync(path.join(ROOT, 'web', 'dist', 'index.html'))) throw new Error('the board is not built: run npm run build first');
  const db = await benchDatabase('herald_bench_board');
  const server = await spawnServer(db.url);
  const browser = await chromium.launch({
    executablePath: process.env.HERALD_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  const rows: string[] = [];
  try {
    for (const n of counts) {
      const others = await spawnClients(server.url, n - 1);
      const page = await browser.newPage();
      // tsx compiles this file with esbuild's keepNames, whose __name helper the page lacks.
      await page.addInitScript('globalThis.__name = (f) => f');
      await page.goto(`${server.url}/#/jobs`);
      await page.waitForSelector('[data-testid="stream-state"]:text-is("live")');
      await page.waitForSelector('[data-testid="jobs-table"]');
      const fromSend: number[] = [];
      const fromReply: number[] = [];
      for (let i = 0; i < samples + 2; i++) {
        await sleep(400);
        const s = await postToRow(page, 'board');
        if (i < 2) continue; // warm-up
        fromSend.push(s.fromSend);
        fromReply.push(s.fromReply);
      }
      await page.close();
      await others.close();
      const a = percentiles(fromSend);
      const b = percentiles(fromReply);
      const line = `| ${n.toLocaleString('en-US')} | ${a.p50.toFixed(1)} | ${a.p95.toFixed(1)} | ${Math.max(...fromSend).toFixed(1)} | ${b.p50.toFixed(1)} |`;
      rows.push(line);
      process.stderr.write(`  ${n} clients: POST sent → row p50 ${a.p50.toFixed(1)} ms, p95 ${a.p95.toFixed(1)} ms\n`);
      await sleep(500);
    }
    process.stdout.write(
      `POST sent → the row in the DOM, Chromium, ms (${db.label}, ${samples} jobs)\n| SSE clients | p50 | p95 | max | p50 from the POST's reply |\n|---|---|---|---|---|\n${rows.join('\n')}\n`,
    );
  } finally {
    await browser.close();
    await server.stop();
    await db.close();
  }
}
