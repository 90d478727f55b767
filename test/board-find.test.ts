// The board's find-and-act views in headless Chromium, against a real `herald server` and
// `herald worker` on this file's own database: search kept in the URL, a bulk retry (dry-run
// count, confirm, live progress) and the queue history charts (live, and kept across a reload).
// Every wait is for something the screen shows; nothing asserts a duration.
//
// It runs on the run's shared board stack, keeping to its own queues.
// Screenshots go to test-artifacts/; with HERALD_DOCS_SCREENSHOT=1 (`npm run screenshots`) also to
// docs/ for the README, made on a stack of the file's own so that only its queues are on them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, sharedBoardStack, startBoardStack, watchPage, type BoardStack } from './support/board.ts';
import { waitFor } from './support/wait.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DOCS_SHOT = process.env.HERALD_DOCS_SCREENSHOT === '1';

let stack: BoardStack;
let server: { url: string };
let browser: Browser;

interface Job {
  id: string;
  status: string;
  lastError?: { reason?: string } | null;
}

const call = <T>(method: string, route: string, body?: unknown) => callApi<T>(server.url, method, route, body);
const batch = (jobs: Record<string, unknown>[]) => call<{ jobs: Job[] }>('POST', '/api/jobs/batch', { jobs });
const list = (q: string) => call<{ jobs: Job[] }>('GET', `/api/jobs?${q}`);

const tid = (id: string) => `[data-testid="${id}"]`;

async function openPage(hash: string): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const errors = watchPage(page);
  await page.goto(`${server.url}/${hash}`);
  await page.waitForSelector(`${tid('stream-state')}:text-is("live")`);
  return { page, errors, close: () => context.close() };
}

async function shot(page: Page, name: string) {
  // The charts redraw from their data once a second: let one redraw happen first.
  await page.waitForTimeout(1_500);
  const dir = path.join(ROOT, 'test-artifacts');
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, name) });
  if (DOCS_SHOT) fs.copyFileSync(path.join(dir, name), path.join(ROOT, 'docs', name));
}

beforeAll(async () => {
  stack = DOCS_SHOT ? await startBoardStack({ workerArgs: ['--concurrency', '20'] }) : await sharedBoardStack();
  ({ browser } = stack);
  [server] = stack.servers;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

describe('find and act on the board', () => {
  it('searches by payload and error, with the filters in the URL', async () => {
    await batch([
      ...Array.from({ length: 6 }, (_, i) => ({ kind: 'echo', queue: 'shop', payload: { customer: i % 2 ? 42 : 7, order: i } })),
      { kind: 'fail', queue: 'shop', payload: { message: 'Payment gateway said NO' }, maxAttempts: 1 },
    ]);
    await waitFor(async () => (await list('queue=shop&status=queued')).jobs.length === 0 && (await list('queue=shop&status=running')).jobs.length === 0, { what: 'shop drained', timeoutMs: 30_000 });

    // A shared link opens the same search.
    const { page, errors, close } = await openPage(`#/jobs?queue=shop&payload=${encodeURIComponent('{"customer":42}')}`);
    await page.waitForSelector(tid('search-note'));
    await page.waitForFunction(() => document.querySelectorAll('[data-testid^="job-row-"]').length === 3);
    expect(await page.inputValue(tid('filter-payload'))).toBe('{"customer":42}');

    // Typing a search puts it in the URL.
    await page.fill(tid('filter-payload'), '');
    await page.fill(tid('filter-error'), 'gateway said no');
    await page.press(tid('filter-error'), 'Enter');
    await page.waitForFunction(() => location.hash.includes('error=gateway+said+no') && !location.hash.includes('payload'));
    const onlyTheFailure = () => {
      const rows = [...document.querySelectorAll('[data-testid^="job-row-"]')];
      return rows.length === 1 && rows[0].getAttribute('data-status') === 'failed';
    };
    await page.waitForFunction(onlyTheFailure);
    // A reload keeps it.
    await page.reload();
    await page.waitForFunction(onlyTheFailure);
    expect(await page.inputValue(tid('filter-error'))).toBe('gateway said no');
    expect(errors).toEqual([]);
    await close();
  }, 120_000);

  it('retries every failed job of a queue: dry-run count, confirm, then progress from the stream', async () => {
    const N = 24;
    await batch(Array.from({ length: N }, (_, i) => ({ kind: 'fail', queue: 'billing', payload: { message: `card declined ${i}` }, maxAttempts: 1 })));
    await waitFor(async () => (await list('queue=billing&status=failed&limit=100')).jobs.length === N, { what: 'billing failed', timeoutMs: 30_000 });

    const { page, errors, close } = await openPage('#/jobs?status=failed');
    // Without a queue or a status there is nothing to count; with a status there is.
    await page.goto(`${server.url}/#/jobs`);
    await page.waitForSelector(`${tid('bulk-preview')}:disabled`);
    await page.goto(`${server.url}/#/jobs?queue=billing&status=failed`);
    await page.waitForSelector('[data-testid^="job-row-"][data-status="failed"]');
    await page.selectOption(tid('bulk-action'), 'retry');
    await page.click(tid('bulk-preview'));
    const question = await page.waitForSelector(tid('bulk-question'));
    expect(await question.textContent()).toBe(`retry ${N} failed jobs in queue billing?`);
    expect(await page.getAttribute(tid('bulk-would'), 'data-would')).toBe(String(N));
    await shot(page, 'board-bulk.png');

    await page.click(tid('bulk-confirm'));
    const result = await page.waitForSelector(`${tid('bulk-result')}[data-affected="${N}"]`);
    expect(await result.textContent()).toContain(`${N} of ${N} matching jobs changed`);
    // Every retried job was seen on the stream (its event names who did it).
    await page.waitForSelector(`${tid('bulk-result')}[data-changed="${N}"]`);
    // The table followed live: rows left 'failed' (queued/running again) without a reload.
    const statuses = await page.$$eval('[data-testid^="job-row-"]', (rows) => rows.map((r) => r.getAttribute('data-status')));
    expect(statuses.length).toBe(N);
    const events = await call<{ events: { type: string; data: { by?: unknown } }[] }>('GET', `/api/jobs/${(await list('queue=billing&limit=1')).jobs[0].id}/events`);
    expect(events.events.find((e) => e.type === 'retried')?.data.by).toEqual({ role: null });
    expect(errors).toEqual([]);
    await close();
  }, 120_000);

  // The bulk actions offered retry, cancel and delete, not redrive; and the dry run counted every
  // match, not what the action would change.
  it('redrives a dead-letter queue: the dry run says how many copies go back, and that many do', async () => {
    await call('PATCH', '/api/queues/pay', { deadLetter: 'pay-dead' });
    await batch(Array.from({ length: 3 }, (_, i) => ({ kind: 'fail', queue: 'pay', payload: { message: `declined ${i}` }, maxAttempts: 1 })));
    await waitFor(async () => (await list('queue=pay-dead&status=queued&limit=100')).jobs.length === 3, { what: 'three copies parked', timeoutMs: 30_000 });
    const { page, errors, close } = await openPage('#/jobs?queue=pay-dead');
    await page.waitForSelector('[data-testid^="job-row-"][data-status="queued"]');
    await page.selectOption(tid('bulk-action'), 'redrive');
    await page.click(tid('bulk-preview'));
    expect(await (await page.waitForSelector(tid('bulk-question'))).textContent()).toBe('redrive 3 jobs in queue pay-dead?');
    expect(await page.getAttribute(tid('bulk-would'), 'data-would')).toBe('3');
    await page.click(tid('bulk-confirm'));
    await page.waitForSelector(`${tid('bulk-result')}[data-affected="3"]`);
    // Each copy names the job it went back as.
    const copies = (await list('queue=pay-dead&limit=100')).jobs.filter((j) => j.status === 'cancelled');
    expect(copies.map((j) => j.lastError?.reason)).toEqual(['redriven', 'redriven', 'redriven']);
    expect(errors).toEqual([]);
    await close();
  }, 120_000);

  it('charts queue history 1h/24h/7d from the server, updating live and kept across a reload', async () => {
    // For the README's picture, a few minutes of traffic first, so the hour has a shape.
    if (DOCS_SHOT) {
      const until = Date.now() + 200_000;
      for (let i = 0; Date.now() < until; i++) {
        const wave = 4 + Math.round(3 * Math.sin(i / 20));
        await batch(Array.from({ length: wave }, (_, k) => (k % 5 === 4
          ? { kind: 'fail', queue: 'billing', payload: { message: 'card declined' }, maxAttempts: 1 }
          : { kind: 'sleep', queue: 'billing', payload: { ms: 100 + ((i * 37 + k * 91) % 900) } })));
        await new Promise((r) => setTimeout(r, 400));
      }
    }
    const { page, errors, close } = await openPage('#/');
    await page.selectOption(tid('history-queue'), 'billing');
    await page.waitForSelector(`${tid('history')}[data-loaded="billing/1h/60"]`);
    // The server rolls history up about every 10 s: wait until billing's jobs show.
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="history"]')?.getAttribute('data-total')) >= 24, undefined, { timeout: 60_000 });
    const before = Number(await page.getAttribute(tid('history'), 'data-total'));
    expect(await page.$$(`${tid('history-counts')} canvas`)).toHaveLength(1);
    await shot(page, 'board-history.png');

    // New jobs reach the chart without a reload.
    await batch(Array.from({ length: 10 }, () => ({ kind: 'echo', queue: 'billing', payload: {} })));
    await page.waitForFunction((n) => Number(document.querySelector('[data-testid="history"]')?.getAttribute('data-total')) >= n + 10, before, { timeout: 60_000 });

    // Another range, and a reload: it comes back from the server, in that range.
    await page.click(tid('history-range-24h'));
    await page.waitForSelector(`${tid('history')}[data-loaded="billing/24h/96"]`);
    await page.reload();
    await page.waitForSelector(`${tid('history')}[data-range="24h"]`);
    await page.selectOption(tid('history-queue'), 'billing');
    await page.waitForFunction((n) => Number(document.querySelector('[data-testid="history"]')?.getAttribute('data-total')) >= n + 10, before);
    await page.click(tid('history-range-7d'));
    await page.waitForSelector(`${tid('history')}[data-loaded="billing/7d/168"]`);

    // A queue's own jobs view charts it too.
    await page.goto(`${server.url}/#/jobs?queue=billing`);
    await page.waitForSelector(`${tid('history')}[data-queue="billing"][data-loaded="billing/7d/168"]`);
    expect(errors).toEqual([]);
    await close();
  }, DOCS_SHOT ? 400_000 : 180_000);
});
