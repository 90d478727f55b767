// The board in a real browser (issue 5): headless Debian Chromium driven by playwright-core,
// against a real `herald server` and a real `herald worker` (built-in demo tasks) on this file's
// own database. Everything is awaited on what the screen shows (data-testid, data-status,
// data-percent); nothing sleeps to wait for a state, and nothing asserts a duration. A job the
// test must see running or mid-way is a `gated` job (test/support/gates.ts): it waits at each
// step until the test opens it, so no test hopes that a timed job outlasts its own steps.
//
// Artifacts: test-artifacts/board-*.png (ignored by git). The README's screenshots are made by
// test/board-first-hour.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestDatabase } from './support/db.ts';
import { callApi, demoTraffic, startBoardStack, watchPage, type BoardStack } from './support/board.ts';
import type { HeraldProcess } from './support/herald-process.ts';
import { GATED_TASKS_DIR, Gates } from './support/gates.ts';
import { startServer } from './system/support.ts';
import { postToRow } from '../bench/board-latency.ts';
import { waitFor } from './support/wait.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const XSS = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2">`;
const TERMINAL = ['succeeded', 'failed', 'cancelled'];

let stack: BoardStack;
let db: TestDatabase;
let server: { proc: HeraldProcess; url: string };
let browser: Browser;
let gates: Gates;
/** A second server on the same database, with HERALD_TOKENS set. */
let secured: { proc: HeraldProcess; url: string };
const TOKENS = 'viewer:viewer-secret,admin:admin-secret';

interface Job {
  id: string;
  queue: string;
  kind: string;
  status: string;
  attempt: number;
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers (Node side)

const call = <T>(method: string, route: string, body?: unknown) => callApi<T>(server.url, method, route, body);
const enqueue = (job: Record<string, unknown>) => call<Job>('POST', '/api/jobs', job);
const getJob = (id: string) => call<Job>('GET', `/api/jobs/${id}`);
const getEvents = async (id: string) =>
  (await call<{ events: { eventId?: string | number; id?: string | number; type: string }[] }>('GET', `/api/jobs/${id}/events`)).events.map(
    (e) => ({ eventId: String(e.eventId ?? e.id), type: e.type }),
  );
async function waitForJob(id: string, test: (j: Job) => boolean, what: string, timeoutMs = 30_000): Promise<Job> {
  let last: Job | undefined;
  await waitFor(async () => test((last = await getJob(id))), { what: `job ${id}: ${what}`, timeoutMs: timeoutMs });
  return last!;
}

// ---------------------------------------------------------------------------------------------
// Browser helpers

const tid = (id: string) => `[data-testid="${id}"]`;

interface Tab {
  context: BrowserContext;
  page: Page;
  /** Uncaught exceptions and console warnings or errors in the page: every test expects none. */
  errors: string[];
  dialogs: string[];
  /** Full page loads; "without a reload" means this stays at 1. */
  loads: number;
  close(): Promise<void>;
}

async function openTab(url: string, hash = '#/', context?: BrowserContext): Promise<Tab> {
  const ctx = context ?? (await browser.newContext({ viewport: { width: 1280, height: 800 } }));
  ctx.setDefaultTimeout(20_000);
  const page = await ctx.newPage();
  const tab: Tab = {
    context: ctx,
    page,
    errors: [],
    dialogs: [],
    loads: 0,
    async close() {
      if (context) await page.close();
      else await ctx.close();
    },
  };
  tab.errors = watchPage(page);
  page.on('dialog', (d) => {
    tab.dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  page.on('load', () => (tab.loads += 1));
  await page.goto(`${url}/${hash}`);
  return tab;
}

const streamState = (page: Page, state: 'connecting' | 'live' | 'reconnecting', timeout = 20_000) =>
  page.waitForSelector(`${tid('stream-state')}:text-is("${state}")`, { timeout });

const jobStatus = (page: Page, status: string, timeout = 30_000) =>
  page.waitForSelector(`${tid('job-status')}:text-is("${status}")`, { timeout });

const rowStatus = (page: Page, id: string, status: string, timeout = 30_000) =>
  page.waitForSelector(`${tid(`job-row-${id}`)}[data-status="${status}"]`, { timeout });

/** Waits until the job page's progress bar shows a percent strictly between `above` and `below`; returns it. */
async function percentWhere(page: Page, above: number, below: number, timeout = 20_000): Promise<number> {
  const handle = await page.waitForFunction(
    ([lo, hi]) => {
      const el = document.querySelector('[data-testid="job-progress"]');
      const p = el ? Number(el.getAttribute('data-percent')) : NaN;
      return p > lo && p < hi ? p : null;
    },
    [above, below] as const,
    { timeout },
  );
  return (await handle.jsonValue()) as number;
}

async function timelineIds(page: Page): Promise<string[]> {
  return page.$$eval(tid('timeline-event'), (els) => els.map((e) => e.getAttribute('data-event-id') ?? ''));
}

async function shot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? false });
  return file;
}

function expectCleanTab(tab: Tab) {
  expect(tab.errors, 'uncaught exceptions and console warnings in the page').toEqual([]);
  expect(tab.dialogs, 'dialogs opened by the page').toEqual([]);
}

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  gates = await Gates.start();
  stack = await startBoardStack({ workerArgs: ['--concurrency', '20', '--tasks', GATED_TASKS_DIR], serverEnvs: [{}, { HERALD_TOKENS: TOKENS }] });
  ({ db, browser } = stack);
  [server, secured] = stack.servers;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await gates?.close();
});

describe('the board in Chromium', () => {
  it('shows a job enqueued through the API at once, and follows it to succeeded without a reload', async () => {
    const tab = await openTab(server.url, '#/jobs');
    const { page } = tab;
    await streamState(page, 'live');
    await page.waitForSelector(tid('jobs-table'));

    // Enqueue from the page (same origin, the API's POST) and time, in the browser, from the POST's
    // reply to the moment the job's row is in the DOM (a MutationObserver, so no polling delay).
    // The table adds new rows at most 4 times a second, so two series: jobs enqueued one at a
    // time (a pause before each lets that limiter go idle) and jobs enqueued back to back.
    const measure = () => postToRow(page, 'board');
    const series = { oneAtATime: [] as number[], oneAtATimeFromSend: [] as number[], backToBack: [] as number[] };
    for (let i = 0; i < 12; i++) {
      const backToBack = i >= 6;
      if (!backToBack) await new Promise((r) => setTimeout(r, 400)); // lets the limiter go idle: pacing, not waiting
      const sample = await measure();
      series[backToBack ? 'backToBack' : 'oneAtATime'].push(sample.fromReply);
      if (!backToBack) series.oneAtATimeFromSend.push(sample.fromSend);
      await rowStatus(page, sample.id, 'succeeded');
    }
    const summary = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return { samples: xs.map(Math.round), median: Math.round(sorted[Math.floor(sorted.length / 2)]), max: Math.round(sorted[sorted.length - 1]) };
    };
    console.log(
      JSON.stringify({
        metric: 'board.enqueue_to_row_ms',
        // From the POST's reply (0 = the row was on screen before the reply was read) …
        oneAtATime: summary(series.oneAtATime),
        // … and from the moment the POST was sent.
        oneAtATimeFromSend: summary(series.oneAtATimeFromSend),
        backToBack: summary(series.backToBack),
      }),
    );

    // The same through the Node side, against the job page: the POST returns, the page follows
    // the job to succeeded and shows its result.
    const job = await enqueue({ kind: 'sleep', queue: 'board', payload: { ms: 600 } });
    await page.goto(`${server.url}/#/jobs/${job.id}`); // a hash change, not a page load
    await jobStatus(page, 'succeeded');
    await page.waitForSelector(`${tid('job-result')}:has-text('"slept": 600')`);
    expect(tab.loads).toBe(1);
    expectCleanTab(tab);
    await tab.close();
  });

  it("moves a progress job's bar as the job reports progress", async () => {
    const gate = gates.create();
    const job = await enqueue({ kind: 'gated', queue: 'board', payload: { gate: gate.url, steps: 4 } });
    const tab = await openTab(server.url, `#/jobs/${job.id}`);
    const { page } = tab;
    await jobStatus(page, 'running');
    gate.open(1);
    expect(await percentWhere(page, 0, 100)).toBe(25);
    gate.open(3);
    expect(await percentWhere(page, 50, 100)).toBe(75);
    gate.open();
    await jobStatus(page, 'succeeded');
    await page.waitForSelector(`${tid('job-progress')}[data-percent="100"]`);
    // Reports close together are coalesced (one write per 250 ms, the last value always): the
    // timeline shows each progress event the job has, however many that came to.
    const stored = (await getEvents(job.id)).map((e) => e.type);
    expect(stored.filter((t) => t === 'progress').length).toBeGreaterThanOrEqual(3);
    await waitFor(async () => {
      const shown = await page.$$eval(tid('timeline-event'), (els) => els.map((e) => e.getAttribute('data-type')));
      return [...shown].sort().join() === [...stored].sort().join();
    }, { what: 'the timeline to show every stored event of the job' });
    await shot(page, 'board-job.png', { fullPage: true });
    expectCleanTab(tab);
    await tab.close();
  });

  it('a job page opened while the job runs shows every one of its events (no gap between load and stream)', async () => {
    // The page loads the job's events over HTTP while its stream connects; the stream starts at
    // the server's head. Events in between must not be lost (the board reloads once the stream is
    // open). Each round is a full page load on a job that emits events every few milliseconds.
    const tab = await openTab(server.url, '#/');
    const { page } = tab;
    for (let round = 0; round < 12; round++) {
      const job = await enqueue({ kind: 'progress', queue: 'board', payload: { steps: 20, stepMs: 5 } });
      await page.goto(`${server.url}/?round=${round}#/jobs/${job.id}`);
      await jobStatus(page, 'succeeded');
      const expected = (await getEvents(job.id)).map((e) => e.eventId);
      let shown: string[] = [];
      await waitFor(async () => (shown = await timelineIds(page)).length >= expected.length, { what: `job ${job.id}'s timeline`, timeoutMs: 10_000 }).catch(
        (err) => {
          throw new Error(`${err.message}\nshown:    ${shown.join(' ')}\nexpected: ${expected.join(' ')}`);
        },
      );
      expect(shown).toEqual(expected);
    }
    expectCleanTab(tab);
    await tab.close();
  });

  it('retries a failed job from its page (retry → confirm), and the retry succeeds', async () => {
    const job = await enqueue({ kind: 'flaky', queue: 'board', payload: { failTimes: 1 }, maxAttempts: 1 });
    const tab = await openTab(server.url, `#/jobs/${job.id}`);
    const { page } = tab;
    await jobStatus(page, 'failed');
    await page.waitForSelector(`${tid('job-error-message')}:has-text("planned failure on attempt 1")`);

    await page.click(tid('retry-button'));
    await page.waitForSelector(tid('confirm-bar'));
    await page.click(tid('confirm-button'));
    await page.waitForSelector(tid('action-done'));
    await jobStatus(page, 'succeeded');
    await page.waitForSelector(`${tid('job-attempt')}:text-matches("^2 /")`);
    await page.waitForSelector(`${tid('job-result')}:has-text('"attempt": 2')`);
    await page.waitForSelector(`${tid('timeline-event')}[data-type="retried"]`);
    expect((await getJob(job.id)).status).toBe('succeeded');
    expect(await page.$(tid('action-error'))).toBeNull();
    expectCleanTab(tab);
    await tab.close();
  });

  it('cancels a running job from its page', async () => {
    // Never opened: the job runs until the cancel aborts its wait.
    const job = await enqueue({ kind: 'gated', queue: 'board', payload: { gate: gates.create().url } });
    const tab = await openTab(server.url, `#/jobs/${job.id}`);
    const { page } = tab;
    await jobStatus(page, 'running');
    await page.click(tid('cancel-button'));
    await page.waitForSelector(`${tid('confirm-bar')}:has-text("signalled to stop")`);
    await page.click(tid('confirm-button'));
    await jobStatus(page, 'cancelled', 20_000);
    await page.waitForSelector(`${tid('timeline-event')}[data-type="cancel_requested"]`);
    await page.waitForSelector(`${tid('timeline-event')}[data-type="cancelled"]`);
    expect((await getJob(job.id)).status).toBe('cancelled');
    expectCleanTab(tab);
    await tab.close();
  });

  it('shows an XSS payload as text and never runs it', async () => {
    const echo = await enqueue({ kind: 'echo', queue: 'board', payload: { note: XSS } });
    const failing = await enqueue({ kind: 'fail', queue: 'board', payload: { message: XSS }, maxAttempts: 1 });
    const tab = await openTab(server.url, `#/jobs/${echo.id}`);
    const { page } = tab;
    await jobStatus(page, 'succeeded');
    // Payload and result (echo returns its payload) hold the string, as text.
    await page.waitForSelector(`${tid('job-payload')}:has-text("window.__xss=2")`);
    expect(await page.textContent(tid('job-payload'))).toContain(JSON.stringify(XSS).slice(1, -1));
    expect(await page.textContent(tid('job-result'))).toContain('<script>window.__xss=1</script>');
    expect(await page.getByText('<img src=x onerror=', { exact: false }).count()).toBeGreaterThan(0);

    // The error path: the failure message is the payload, shown in the error box and the timeline.
    await page.goto(`${server.url}/#/jobs/${failing.id}`);
    await jobStatus(page, 'failed');
    expect(await page.textContent(tid('job-error-message'))).toBe(XSS);
    await page.waitForSelector(`${tid('timeline-event')}[data-type="failed"]:has-text("window.__xss=1")`);

    // The lists render around it too: the jobs table and the overview.
    await page.goto(`${server.url}/#/jobs?queue=board`);
    await page.waitForSelector(tid(`job-row-${failing.id}`));
    await page.goto(`${server.url}/#/`);
    await page.waitForSelector(tid('queue-row-board'));

    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.$$eval('img[src="x"]', (els) => els.length)).toBe(0);
    expect(await page.$$eval('script', (els) => els.filter((e) => e.textContent?.includes('__xss')).length)).toBe(0);
    expectCleanTab(tab);
    await tab.close();
  });

  it('shows reconnecting while the server is down, then live, and catches up on every event', async () => {
    const port = new URL(server.url).port;
    // A job that runs through the outage: it starts now, and the test lets it finish while the
    // server is down.
    const gate = gates.create();
    const spanning = await enqueue({ kind: 'gated', queue: 'outage', payload: { gate: gate.url, steps: 4 } });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const detail = await openTab(server.url, `#/jobs/${spanning.id}`, context);
    const table = await openTab(server.url, '#/jobs', context);
    await Promise.all([streamState(detail.page, 'live'), streamState(table.page, 'live')]);
    await jobStatus(detail.page, 'running');
    gate.open(1);
    await percentWhere(detail.page, 0, 100);

    // Stop the server. The worker keeps running jobs; they go straight to the database.
    server.proc.kill('SIGTERM');
    const exit = await Promise.race([
      server.proc.exited,
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000)),
    ]);
    expect(exit, `the server did not exit within 15 s of SIGTERM:\n${server.proc.tail()}`).not.toBe('hung');
    await Promise.all([streamState(detail.page, 'reconnecting'), streamState(table.page, 'reconnecting')]);

    const during: string[] = [];
    for (const input of [
      { kind: 'echo', payload: { during: 'outage' } },
      { kind: 'sleep', payload: { ms: 300 } },
      { kind: 'flaky', payload: { failTimes: 5 }, maxAttempts: 1 },
      { kind: 'fail', payload: { message: 'failed while the server was down' }, maxAttempts: 1 },
      { kind: 'progress', payload: { steps: 3, stepMs: 100 } },
    ]) {
      const { job } = await db.queue.enqueue({ queue: 'outage', ...input });
      during.push(job.id);
    }
    gate.open();
    const finals = new Map<string, string>();
    await waitFor(
      async () => {
        for (const id of [spanning.id, ...during]) {
          const j = await db.queue.get(id);
          if (!j || !TERMINAL.includes(j.status)) return false;
          finals.set(id, j.status);
        }
        return true;
      }, { what: 'the jobs of the outage to finish (the worker runs without the server)', timeoutMs: 30_000 });
    expect([...finals.values()].sort()).toEqual(['failed', 'failed', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
    // The board is still waiting for its server.
    expect(await detail.page.textContent(tid('stream-state'))).toBe('reconnecting');

    // Start a new server on the same port (in the stack's list, so the stack stops it too).
    server = stack.servers[0] = await startServer({ DATABASE_URL: db.url, PORT: port });
    expect(new URL(server.url).port).toBe(port);
    await Promise.all([streamState(detail.page, 'live', 40_000), streamState(table.page, 'live', 40_000)]);

    // The table caught up: the jobs that ran while the server was down are there, final.
    for (const [id, status] of finals) await rowStatus(table.page, id, status);

    // The job page's timeline holds every event exactly once, in the server's order.
    await jobStatus(detail.page, 'succeeded');
    const expected = (await getEvents(spanning.id)).map((e) => e.eventId);
    let shown: string[] = [];
    await waitFor(
      async () => (shown = await timelineIds(detail.page)).length >= expected.length, { what: 'the timeline to hold as many events as the API lists', timeoutMs: 20_000 }).catch((err) => {
      throw new Error(`${err.message}\nshown:    ${shown.join(' ')}\nexpected: ${expected.join(' ')}`);
    });
    expect(shown).toEqual(expected);
    expect(new Set(shown).size).toBe(shown.length);
    await detail.page.waitForSelector(`${tid('job-progress')}[data-percent="100"]`);

    expect(detail.loads).toBe(1);
    expect(table.loads).toBe(1);
    expectCleanTab(detail);
    expectCleanTab(table);
    await context.close();
  });

  it('Health names the session that holds the stream back, with a visible warning, until it ends', async () => {
    const writer = new pg.Client({ connectionString: db.url, application_name: 'board-test:long-writer' });
    await writer.connect();
    const tab = await openTab(server.url, '#/health');
    const { page } = tab;
    try {
      await page.waitForSelector(tid('health-db'));
      expect(await page.$(tid('stream-held-warning'))).toBeNull();
      const pid = (await writer.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO herald.jobs (kind, queue) VALUES ('long-writer', 'held')`);
      await enqueue({ kind: 'echo', queue: 'held' }); // committed after the writer's xid: held back
      const warning = await page.waitForSelector(tid('stream-held-warning'), { timeout: 30_000 });
      expect(await warning.isVisible()).toBe(true);
      expect(await page.textContent(tid('held-pid'))).toBe(String(pid));
      expect(await page.textContent(tid('held-application'))).toBe('board-test:long-writer');
      expect(await page.textContent(tid('held-state'))).toBe('idle in transaction');
      expect(await page.textContent(tid('held-query-start'))).not.toBe('—');
      // Every page says so in its header, and links here.
      await page.goto(`${server.url}/#/jobs`);
      const badge = await page.waitForSelector(tid('header-stream-held'), { timeout: 30_000 });
      expect(await badge.textContent()).toContain(`pid ${pid}`);
      await badge.click();
      await page.waitForSelector(tid('stream-held-warning'));
      await shot(page, 'board-health-held.png');
      await writer.query('COMMIT');
      await page.waitForSelector(tid('stream-held-warning'), { state: 'detached', timeout: 30_000 });
      await page.waitForSelector(tid('header-stream-held'), { state: 'detached', timeout: 30_000 });
      expectCleanTab(tab);
    } finally {
      await writer.end();
      await tab.close();
    }
  });

  it('asks for a token when HERALD_TOKENS is set; a viewer sees data and gets a plain 403 on retry', async () => {
    const failed = await enqueue({ kind: 'fail', queue: 'board', payload: { message: 'needs an admin' }, maxAttempts: 1 });
    await waitForJob(failed.id, (j) => j.status === 'failed', 'failed');
    const tab = await openTab(secured.url, '#/');
    const { page } = tab;
    await page.waitForSelector(tid('token-input'));
    await page.waitForSelector(`${tid('token-form')} ${tid('auth-error')}:has-text("needs a token")`);

    // An unknown token keeps the prompt open, saying so in the server's words.
    await page.fill(tid('token-input'), 'not-a-token');
    await page.click(tid('token-submit'));
    await page.waitForSelector(`${tid('token-form')} ${tid('auth-error')}:has-text("unknown token")`);
    expect(await page.$$eval(tid('auth-error'), (els) => els.length)).toBe(1);

    await page.fill(tid('token-input'), 'viewer-secret');
    await page.click(tid('token-submit'));
    await page.waitForSelector(tid('token-form'), { state: 'detached' });
    await page.waitForSelector(tid('queue-row-board'));
    await streamState(page, 'live');

    await page.goto(`${secured.url}/#/jobs/${failed.id}`);
    await jobStatus(page, 'failed');
    await page.click(tid('retry-button'));
    await page.click(tid('confirm-button'));
    const note = await page.waitForSelector(`${tid('action-error')} ${tid('auth-error')}`);
    const text = (await note.textContent()) ?? '';
    expect(text).toMatch(/\(403\)/);
    expect(text).toMatch(/^Your role cannot do this \(403\): a viewer token cannot POST \S+retry/);
    // A 403 is not a 401: no token prompt, and the job is untouched.
    expect(await page.$(tid('token-form'))).toBeNull();
    expect((await getJob(failed.id)).status).toBe('failed');
    expectCleanTab(tab);
    await tab.close();
  });

  it('overview with queues and jobs in motion (screenshots)', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const tab = await openTab(server.url, '#/', context);
    const { page } = tab;
    await streamState(page, 'live');

    const queues = ['emails', 'reports', 'images', 'webhooks'];
    // Two jobs held running for the whole test, so that "running" is on screen whatever the load.
    const held = [gates.create(), gates.create()];
    for (const [i, gate] of held.entries()) await enqueue({ kind: 'gated', queue: queues[i], payload: { gate: gate.url } });
    const traffic = demoTraffic((jobs) => call('POST', '/api/jobs/batch', { jobs }), queues);
    try {
      await new Promise((r) => setTimeout(r, 4000)); // a few seconds of traffic: pacing, not waiting
      for (const q of queues) await page.waitForSelector(tid(`queue-row-${q}`));
      await page.waitForSelector(`${tid('recent-events')} >> text=claimed`);
      // Jobs in motion: some running right now.
      await page.waitForFunction(() =>
        [...document.querySelectorAll('[data-testid^="queue-row-"] [data-count="running"]')].some((c) => c.textContent?.trim() !== '0'),
      );
      const file = await shot(page, 'board-overview.png');
      expect(fs.statSync(file).size).toBeGreaterThan(10_000);

      // A job page mid-run, and the jobs table.
      const midway = gates.create();
      held.push(midway);
      const job = await enqueue({ kind: 'gated', queue: 'reports', priority: 10, payload: { gate: midway.url, steps: 20 } });
      await page.goto(`${server.url}/#/jobs/${job.id}`);
      midway.open(12);
      await percentWhere(page, 40, 100);
      await shot(page, 'board-job-running.png');
      await page.goto(`${server.url}/#/jobs`);
      await page.waitForSelector(`${tid('jobs-table')} [data-status]`);
      await shot(page, 'board-jobs.png');
    } finally {
      for (const gate of held) gate.open();
      await traffic.stop();
    }
    expectCleanTab(tab);
    await context.close();
  }, 60_000);
});
