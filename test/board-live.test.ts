// The board live, in a real browser: headless Debian Chromium driven by playwright-core, against
// a real `herald server` and a real `herald worker` (built-in demo tasks) on this file's own
// database. A job enqueued is on screen at once; the board rides through a server outage and
// catches up on every event; Health names a session that holds the stream back; the overview with
// jobs in motion. Everything is awaited on what the screen shows; nothing sleeps to wait for a
// state, and nothing asserts a duration. A job the test must see running is a `gated` job
// (test/support/gates.ts).
//
// Artifacts: test-artifacts/board-*.png (ignored by git). The last test makes screenshots of the
// overview, a job page and the jobs table with jobs in motion: `npm run screenshots` runs it (npm
// test does not). The README's screenshots are made by test/board-first-hour.test.ts.
import fs from 'node:fs';
import pg from 'pg';
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { TestDatabase } from './support/db.ts';
import { demoTraffic, type OwnBoardStack } from './support/board.ts';
import { boardApi, expectCleanTab, jobStatus, percentWhere, rowStatus, shot, streamState, tabOpener, tid, timelineIds, useGatedBoard } from './support/board-tab.ts';
import type { HeraldProcess } from './support/herald-process.ts';
import type { Gates } from './support/gates.ts';
import { startServer } from './system/support.ts';
import { postToRow } from '../bench/board-latency.ts';
import { waitFor } from './support/wait.ts';

const TERMINAL = ['succeeded', 'failed', 'cancelled'];
const SHOTS = process.env.HERALD_DOCS_SCREENSHOT === '1';

let stack: OwnBoardStack;
let db: TestDatabase;
let server: { proc: HeraldProcess; url: string };
let browser: Browser;
let gates: Gates;

const { call, enqueue, getEvents } = boardApi(() => server.url);
const openTab = tabOpener(() => browser);

useGatedBoard('own', (started, gated) => {
  stack = started;
  gates = gated;
  ({ db, browser } = stack);
  [server] = stack.servers;
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

  it.runIf(SHOTS)('overview with queues and jobs in motion (screenshots)', async () => {
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
