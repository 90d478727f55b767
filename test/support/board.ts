// What the board tests in Chromium share: the run's Chromium (board-global-setup.ts), and the
// stack they drive: the run's shared one, or one of the file's own (servers and a worker as real
// processes on the file's own database).
import { chromium, type Browser, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { ensureFreshBoard, startProcesses, type ServerProcess, type StackProcesses } from './board-processes.ts';

/** A connection of this file's own to the run's Chromium: its contexts are this file's. */
const connectChromium = (): Promise<Browser> => chromium.connect(inject('boardChromium'));

/** A stack's servers and the file's connection to Chromium. */
export interface BoardStack {
  servers: { url: string }[];
  browser: Browser;
  stop(): Promise<void>;
}

/** A stack of the file's own: its database, its processes. */
export interface OwnBoardStack extends BoardStack, StackProcesses {
  db: TestDatabase;
  servers: ServerProcess[];
}

/**
 * The run's shared stack: `servers[0]` without tokens, `servers[1]` with SHARED_TOKENS, and a
 * worker that runs the gated tasks (30 slots) and takes every queue. Other files use it at the
 * same time: keep to queues of the file's own, and look only at them.
 */
export async function sharedBoardStack(): Promise<BoardStack> {
  const { url, securedUrl } = inject('boardShared');
  const browser = await connectChromium();
  return { servers: [{ url }, { url: securedUrl }], browser, stop: () => browser.close() };
}

/**
 * A stack of the file's own: a fresh board build, this file's database (`db`, or a new one), its
 * servers and one worker (startProcesses), and a connection to Chromium. A part that fails to start leaves
 * nothing behind.
 */
export async function startBoardStack(opts: { workerArgs: string[]; serverEnvs?: Record<string, string>[]; db?: TestDatabase }): Promise<OwnBoardStack> {
  await ensureFreshBoard();
  const db = opts.db ?? (await createTestDatabase());
  const [processes, browser] = await Promise.allSettled([startProcesses({ databaseUrl: db.url, ...opts }), connectChromium()]);
  if (processes.status === 'rejected' || browser.status === 'rejected') {
    if (processes.status === 'fulfilled') await processes.value.stop();
    if (browser.status === 'fulfilled') await browser.value.close();
    await db.drop();
    throw processes.status === 'rejected' ? processes.reason : (browser as PromiseRejectedResult).reason;
  }
  const own = processes.value;
  return {
    ...own,
    db,
    browser: browser.value,
    async stop() {
      await browser.value.close();
      await own.stop();
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
