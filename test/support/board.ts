// What the board tests in Chromium share: a fresh build of the board, Chromium itself, and the
// stack they drive (servers and a worker as real processes on the file's own database).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildBoard } from '../../server/board.ts';
import { startServer } from '../system/support.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { alive, spawnHerald, type HeraldProcess } from './herald-process.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM = process.env.HERALD_CHROMIUM ?? '/usr/bin/chromium';

/** Newest modification time of the board's sources (web/src, index.html, the Vite config). */
function newestSource(dir = path.join(ROOT, 'web')): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'dist' || entry.name.startsWith('dist.') || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** Runs `fn` holding a lock directory shared by the test processes; one left by a dead process is broken. */
async function withLockDir<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      fs.mkdirSync(dir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner = 0;
    try {
      owner = Number(fs.readFileSync(path.join(dir, 'pid'), 'utf8'));
    } catch {
      // Just made, its pid not yet written: wait.
    }
    if (owner && !alive(owner)) fs.rmSync(dir, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 200));
  }
  fs.writeFileSync(path.join(dir, 'pid'), String(process.pid));
  try {
    return await fn();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The server serves web/dist. Build it when it is missing (as `herald start` does), and also when
 * it is older than its sources: a stale build would test yesterday's board.
 * Board files run side by side: one builds while the others wait on the lock, then find the build
 * fresh (and buildBoard swaps a build in whole, so another file's server never serves half of one).
 */
async function ensureFreshBoard(): Promise<void> {
  const dist = path.join(ROOT, 'web', 'dist');
  const index = path.join(dist, 'index.html');
  const fresh = () => fs.existsSync(index) && fs.statSync(index).mtimeMs >= newestSource();
  if (fresh()) return;
  await withLockDir(path.join(ROOT, 'web', '.dist-lock'), async () => {
    if (!fresh()) await buildBoard(dist);
  });
}

/** Headless Debian Chromium (no browser download). */
function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

type ServerProcess = { proc: HeraldProcess; url: string };

export interface BoardStack {
  db: TestDatabase;
  /** One `herald server` per entry of `serverEnvs`, in that order. */
  servers: ServerProcess[];
  worker: HeraldProcess;
  /** The worker's identity, as its "worker started" line gives it. */
  workerId: string;
  browser: Browser;
  stop(): Promise<void>;
}

/**
 * A fresh board build, this file's database, its servers and one worker started side by side,
 * and Chromium. Each server gets DATABASE_URL and the info log level under its own env.
 */
export async function startBoardStack(opts: { workerArgs: string[]; serverEnvs?: Record<string, string>[] }): Promise<BoardStack> {
  await ensureFreshBoard();
  const db = await createTestDatabase();
  const env = { DATABASE_URL: db.url, HERALD_LOG_LEVEL: 'info' };
  const [servers, [worker, workerId], browser] = await Promise.all([
    Promise.all((opts.serverEnvs ?? [{}]).map((extra) => startServer({ ...env, ...extra }))),
    (async (): Promise<[HeraldProcess, string]> => {
      const w = spawnHerald(['worker', ...opts.workerArgs], env);
      return [w, String((await w.waitForMessage(/^worker started$/, 60_000)).worker)];
    })(),
    launchChromium(),
  ]);
  return {
    db, servers, worker, workerId, browser,
    async stop() {
      await browser.close();
      await Promise.all([...servers.map((s) => s.proc.dispose()), worker.dispose()]);
      await db.drop();
    },
  };
}

/**
 * What a page reports that a test should not see: uncaught exceptions, and every console warning
 * or error (Svelte's own warnings, such as derived_inert, are console warnings). The browser's
 * "Failed to load resource" lines are left out: they report an HTTP status the page handles (a
 * 400 shown inline, the 401 that opens the token prompt, a server that is down for a test).
 */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${String(e)}`));
  page.on('console', (m) => {
    if (m.type() !== 'warning' && m.type() !== 'error') return;
    if (m.text().startsWith('Failed to load resource')) return;
    problems.push(`console.${m.type()}: ${m.text()}`);
  });
  return problems;
}

/** A page of the board in a fresh browser context (1280 px wide, 30 s waits), watched for problems. */
export async function openBoard(browser: Browser, url: string, hash: string): Promise<{ page: Page; problems: string[]; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const problems = watchPage(page);
  await page.goto(`${url}/${hash}`);
  return { page, problems, close: () => context.close() };
}

/**
 * Demo traffic for screenshots: batches of mixed jobs on a few queues every 400 ms (7.5 jobs a
 * second on average, swelling and ebbing so the charts have a shape), the same every run. The
 * pauses pace the load; nothing waits on them. `stop()` ends it and reports its failure, if any.
 */
export function demoTraffic(post: (jobs: Record<string, unknown>[]) => Promise<unknown>, queues: string[]): { stop(): Promise<void> } {
  let stopped = false;
  let n = 0;
  let seed = 42; // mulberry32
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const started = Date.now();
  const run = (async () => {
    while (!stopped) {
      const t = (Date.now() - started) / 1000;
      const count = Math.round(3 + 2 * Math.sin(t / 8));
      const jobs = [];
      for (let k = 0; k < count; k++, n++) {
        const queue = queues[Math.floor(random() * queues.length)];
        const r = random();
        if (r < 0.45) jobs.push({ kind: 'sleep', queue, payload: { ms: 200 + Math.floor(random() * 2800) } });
        else if (r < 0.57) jobs.push({ kind: 'progress', queue, payload: { steps: 10, stepMs: 250 + Math.floor(random() * 300) } });
        else if (r < 0.70) jobs.push({ kind: 'flaky', queue, payload: { failTimes: 1 }, maxAttempts: random() < 0.3 ? 1 : 3 });
        else if (r < 0.85) jobs.push({ kind: 'echo', queue, payload: { n } });
        else if (r < 0.89) jobs.push({ kind: 'fail', queue, payload: { message: 'upstream answered 503' }, maxAttempts: 2 });
        else jobs.push({ kind: 'sleep', queue, payload: { ms: 1000 }, runAt: new Date(Date.now() + 120_000).toISOString() });
      }
      await post(jobs);
      await new Promise((r) => setTimeout(r, 400));
    }
  })();
  run.catch(() => {}); // reported by stop()
  return {
    async stop() {
      stopped = true;
      await run;
    },
  };
}

/** A JSON call to a server of the stack (no token); a non-2xx reply throws with its body. */
export async function callApi<T>(base: string, method: string, route: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route} → ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}
