// The board's main thread under load: the Overview open in headless Chromium while a worker drains
// jobs enqueued at a steady rate (each job is three events: enqueued, claimed, succeeded). Over
// the window the page records its long tasks (PerformanceObserver 'longtask', over 50 ms) and
// its frame intervals; events/s is what the page itself received (the stream badge's count).
//   npm run bench -- --board [--trace]
// Sizes: BENCH_BOARD_EVENTS_PER_S (4000), BENCH_BOARD_SECONDS (20), BENCH_BOARD_RUNS (3).
// BENCH_BOARD_CPU_SLOWDOWN (1): Chromium's CPU throttling (DevTools' "4× slowdown"), for a slower
// machine than this one, or a busier one, without depending on what else happens to run.
// BENCH_BOARD_VARIANTS=a,b,…: the runs alternate between variants of the page, each
// `[dir][+reader][@playwright]`: the page's files from the build in dir instead of web/dist (the
// API is the server's); +eventsource for the stream read by the browser's EventSource rather than
// the board's FetchSource (localStorage herald.streamReader); @playwright for the page driven by
// Playwright, whose Network domain copies the stream for the inspector (bench/board-pipe.ts says
// why the bench otherwise drives Chromium itself; a dir or --trace needs Playwright too). Before
// and after a change, under the same noise: `/tmp/old-build,,+eventsource`.
// `--trace` saves each run's Chromium trace (JS samples included) to $TMPDIR/herald-board-load-<run>.json, for
// DevTools' Performance panel, and prints the functions with the most self time inside long tasks.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type pg from 'pg';
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { startWorker } from '../worker/index.ts';
import { CHROMIUM_OPTIONS, ensureFreshBoard } from '../test/support/board-processes.ts';
import { waitFor } from '../test/support/wait.ts';
import { PipePage } from './board-pipe.ts';
import { summarizeTrace, TRACE_CATEGORIES } from './board-trace.ts';
import { benchDbName, CONCURRENCY, median } from './peers/harness.ts';
import { benchDatabase, spawnServer } from './server-support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TICK_MS = 50;
const WARMUP_MS = 3000;
const VIEWPORT = { width: 1280, height: 900 };

export interface BoardLoadSizes { eventsPerSecond: number; seconds: number; runs: number; trace: boolean; variants: string[]; cpuSlowdown: number }

export interface BoardLoadRun {
  longTasks: number;
  longestMs: number;
  p50Ms: number;
  /** Total main-thread time in long tasks, ms. */
  blockedMs: number;
  eventsPerSecond: number;
  /** Median frame rate over the window, from requestAnimationFrame intervals. */
  fps: number;
  /** The traced run's hottest functions inside long tasks (--trace only). */
  hot?: string[];
  /** The variant (BENCH_BOARD_VARIANTS), when there are several. */
  variant?: string;
}

// Runs in the page before its scripts: long tasks and frame intervals from the moment `start` is called.
const PAGE_PROBE = `
  (() => {
    const s = { from: Infinity, to: Infinity, tasks: [], frames: [] };
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.startTime >= s.from && e.startTime < s.to) s.tasks.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
    let last = 0;
    const frame = (t) => {
      if (t >= s.from && t < s.to && last) s.frames.push(t - last);
      last = t;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    globalThis.__boardLoad = {
      start() { s.from = performance.now(); },
      stop() { s.to = performance.now(); return { tasks: s.tasks, frames: s.frames, ms: s.to - s.from }; },
    };
  })();
`;

/** Events received so far, from the stream badge's title ("Live. N events received…"). */
async function eventsReceived(page: BenchPage): Promise<number> {
  const title = await page.evaluate<string | null>(`document.querySelector('[data-testid="stream-state"]')?.parentElement?.title ?? null`);
  const m = /(\d+) events received/.exec(title ?? '');
  if (!m) throw new Error(`the stream badge says ${JSON.stringify(title)}`);
  return Number(m[1]);
}

/** Waits until `expression` is true in the page. */
const showing = (page: BenchPage, expression: string, what: string) =>
  waitFor(() => page.evaluate<boolean>(expression), { what: `the board to show ${what}`, timeoutMs: 60_000, everyMs: 100 });

/** What a run needs of its page, from either driver. */
interface BenchPage { evaluate<T>(expression: string): Promise<T>; close(): Promise<void> }

/** Enqueues `perSecond` jobs a second in ticks until `stop` is called. */
function steadyLoad(queue: Queue, perSecond: number): { stop(): Promise<number> } {
  let running = true;
  let sent = 0;
  const done = (async () => {
    const t0 = performance.now();
    for (let tick = 1; running; tick++) {
      const due = Math.round((perSecond * tick * TICK_MS) / 1000) - sent;
      if (due > 0) await queue.enqueueMany(Array.from({ length: due }, () => ({ kind: 'noop', queue: 'board-load' })));
      sent += Math.max(0, due);
      const wait = t0 + tick * TICK_MS - performance.now();
      if (wait > 0) await sleep(wait);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return sent;
    },
  };
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };

/** The board's own files from `dist`, everything under /api and /metrics from the server. */
async function serveBoardFrom(page: Page, url: string, dist: string): Promise<void> {
  const origin = new URL(url).origin;
  await page.route((u) => u.origin === origin && !/^\/(api|metrics)\b/.test(u.pathname), async (route) => {
    const file = path.join(dist, new URL(route.request().url()).pathname.replace(/^\/$/, '/index.html'));
    if (!fs.existsSync(file)) return route.fulfill({ status: 404 });
    await route.fulfill({ body: fs.readFileSync(file), contentType: TYPES[path.extname(file)] ?? 'application/octet-stream' });
  });
}

/** The page through Playwright: what serving another build (page.route) and tracing need. */
async function playwrightPage(browser: Browser, url: string, sizes: BoardLoadSizes, dist: string, init: string): Promise<BenchPage & { page: Page }> {
  const page = await browser.newPage({ viewport: VIEWPORT });
  await page.addInitScript(init);
  if (dist) await serveBoardFrom(page, url, dist);
  if (sizes.cpuSlowdown > 1) {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: sizes.cpuSlowdown });
  }
  await page.goto(`${url}/#/`);
  return { page, evaluate: <T>(e: string) => page.evaluate<T>(e), close: () => page.close() };
}

async function oneRun(browser: Browser, url: string, pool: pg.Pool, sizes: BoardLoadSizes, variant: string, run: number, say: (line: string) => void): Promise<BoardLoadRun> {
  await pool.query('TRUNCATE herald.jobs, herald.job_events');
  const [spec, driver] = variant.split('@');
  const [dist, reader] = spec.split('+');
  const init = PAGE_PROBE + (reader ? `localStorage.setItem('herald.streamReader', ${JSON.stringify(reader)});` : '');
  const viaPlaywright = Boolean(dist) || sizes.trace || driver === 'playwright';
  const pw = viaPlaywright ? await playwrightPage(browser, url, sizes, dist, init) : undefined;
  const page: BenchPage = pw ?? await PipePage.open(`${url}/#/`, VIEWPORT, init, sizes.cpuSlowdown);
  try {
    await showing(page, `document.querySelector('[data-testid="stream-state"]')?.textContent === 'live'`, 'a live stream');
    await showing(page, `!!document.querySelector('[data-testid="chart-rates"]')`, 'its rates chart');
    const load = steadyLoad(new Queue(pool), sizes.eventsPerSecond / 3);
    let hot: string[] | undefined;
    try {
      await sleep(WARMUP_MS);
      const tracePath = path.join(os.tmpdir(), `herald-board-load-${run}.json`);
      if (sizes.trace) await browser.startTracing(pw!.page, { path: tracePath, categories: TRACE_CATEGORIES });
      const before = await eventsReceived(page);
      await page.evaluate('__boardLoad.start()');
      await sleep(sizes.seconds * 1000);
      const probe = await page.evaluate<{ tasks: number[]; frames: number[]; ms: number }>('__boardLoad.stop()');
      const after = await eventsReceived(page);
      if (sizes.trace) {
        await browser.stopTracing();
        hot = summarizeTrace(JSON.parse(fs.readFileSync(tracePath, 'utf8')) as Parameters<typeof summarizeTrace>[0]);
        say(`  trace: ${tracePath}`);
      }
      const tasks = [...probe.tasks].sort((a, b) => a - b);
      return {
        longTasks: tasks.length,
        longestMs: tasks.at(-1) ?? 0,
        p50Ms: tasks.length ? median(tasks) : 0,
        blockedMs: tasks.reduce((s, x) => s + x, 0),
        eventsPerSecond: (after - before) / (probe.ms / 1000),
        fps: probe.frames.length ? 1000 / median(probe.frames) : 0,
        hot,
      };
    } finally {
      await load.stop();
    }
  } finally {
    await page.close();
  }
}

export async function boardLoadBench(sizes: BoardLoadSizes, say: (line: string) => void): Promise<{ label: string; runs: BoardLoadRun[] }> {
  const variants = sizes.variants.length ? sizes.variants : [''];
  if (variants.some((v) => !v.split(/[+@]/)[0])) await ensureFreshBoard();
  const db = await benchDatabase(benchDbName('board_load'));
  const server = await spawnServer(db.url);
  const pool = createPool(db.url, { max: 2, applicationName: 'herald:bench-producer' });
  const worker = await startWorker({ databaseUrl: db.url, concurrency: CONCURRENCY, tasks: { noop: async () => null } });
  const browser = await chromium.launch(CHROMIUM_OPTIONS);
  const runs: BoardLoadRun[] = [];
  try {
    for (let run = 1; run <= sizes.runs * variants.length; run++) {
      const variant = variants[(run - 1) % variants.length];
      const r = await oneRun(browser, server.url, pool, sizes, variant, run, say);
      const label = !variant || /^[+@]/.test(variant) ? `web/dist${variant}` : variant;
      runs.push(variants.length > 1 ? { ...r, variant: label } : r);
      say(`  run ${run}${variants.length > 1 ? ` (${label})` : ''}: ${r.longTasks} long tasks, longest ${r.longestMs.toFixed(0)} ms, p50 ${r.p50Ms.toFixed(0)} ms, ` +
        `${r.eventsPerSecond.toFixed(0)} events/s, ${r.fps.toFixed(0)} fps median`);
      for (const line of r.hot ?? []) say(`    ${line}`);
    }
  } finally {
    await browser.close();
    await worker.stop();
    await pool.end();
    await server.stop();
    await db.close();
  }
  return { label: db.label, runs };
}

export function boardLoadTable(runs: BoardLoadRun[], sizes: BoardLoadSizes): string {
  const rows = runs.map((r, i) =>
    `| ${i + 1}${r.variant ? ` ${r.variant}` : ''} | ${r.longTasks} | ${r.longestMs.toFixed(0)} | ${r.p50Ms.toFixed(0)} | ${r.blockedMs.toFixed(0)} | ${Math.round(r.eventsPerSecond).toLocaleString('en-US')} | ${r.fps.toFixed(0)} |`);
  return [
    `The Overview at ${sizes.eventsPerSecond.toLocaleString('en-US')} events/s offered, ${sizes.seconds} s a run` +
      `${sizes.cpuSlowdown > 1 ? `, CPU ${sizes.cpuSlowdown}× slowed down` : ''} (long tasks: over 50 ms)`,
    '| run | long tasks | longest ms | p50 ms | in long tasks, ms | events/s received | fps median |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
