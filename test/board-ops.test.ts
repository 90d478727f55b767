// The board's operations features, in headless Chromium against a real `herald server` and a
// real `herald worker` on this file's own database: the job page links a dead letter and its
// source both ways, and the Health page lists an alert condition while it holds. Every wait is
// for what the screen (or the API) shows; nothing asserts a duration.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, openBoard, startBoardStack, type OwnBoardStack } from './support/board.ts';
import { waitFor } from './support/wait.ts';
import { shot } from './support/board-tab.ts';

let stack: OwnBoardStack;
let url: string;
let browser: Browser;

interface Job {
  id: string;
  status: string;
  queue: string;
  deadLetterOf: string | null;
}
interface Alert {
  alert: string;
  queue: string | null;
}

const alertsNow = async () => (await callApi<{ alerts: Alert[] }>(url, 'GET', '/api/alerts')).alerts;
const call = <T>(method: string, route: string, body?: unknown) => callApi<T>(url, method, route, body);
const tid = (id: string) => `[data-testid="${id}"]`;

const open = (hash: string) => openBoard(browser, url, hash);

beforeAll(async () => {
  // The worker takes only `work`: the dead-letter queue keeps its copies, and `orphans` has no
  // live worker: HeraldNoWorker (here for a queue nobody takes; server-alerts.test.ts has a kind nobody knows).
  stack = await startBoardStack({ workerArgs: ['--queues', 'work', '--concurrency', '4'] });
  ({ browser } = stack);
  url = stack.servers[0].url;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

describe('the board, for an operator', () => {
  it('a job that fails for good links its dead-letter copy, and the copy links back to it', async () => {
    await call('PATCH', '/api/queues/work', { deadLetter: 'dlq' });
    const source = await call<Job>('POST', '/api/jobs', { kind: 'fail', queue: 'work', payload: { message: 'card declined' }, maxAttempts: 1 });
    await waitFor(async () => (await call<Job>('GET', `/api/jobs/${source.id}`)).status === 'failed', { what: 'the source failed for good', timeoutMs: 60_000 });
    const copies = (await call<{ jobs: Job[] }>('GET', '/api/jobs?queue=dlq')).jobs;
    expect(copies).toHaveLength(1);
    const copy = copies[0];
    expect(copy.deadLetterOf).toBe(source.id);

    const { page, problems, close } = await open(`#/jobs/${source.id}`);
    const toCopy = page.locator(`${tid('job-dead-letter-copy')} a`);
    await toCopy.waitFor();
    expect(await toCopy.innerText()).toBe(`#${copy.id}`);
    expect(await page.innerText(tid('job-dead-letter-copy'))).toContain('dlq');
    await toCopy.click();
    await page.waitForURL((u) => u.hash === `#/jobs/${copy.id}`);
    const toSource = page.locator(`${tid('job-dead-letter-of')} a`);
    await toSource.waitFor();
    expect(await toSource.innerText()).toBe(`#${source.id}`);
    // The copy is no failure of its own: its page names no copy of it.
    expect(await page.locator(tid('job-dead-letter-copy')).count()).toBe(0);
    await toSource.click();
    await page.waitForURL((u) => u.hash === `#/jobs/${source.id}`);
    await page.locator(`${tid('job-dead-letter-copy')} a`).waitFor();
    expect(problems).toEqual([]);
    await close();
  });

  it('the Health page lists HeraldNoWorker while ready jobs wait in a queue no worker takes, and drops it once they are gone', async () => {
    const { page, problems, close } = await open('#/health');
    await page.waitForSelector(tid('health-no-alerts'));
    // Ready for two minutes already (runAt in the past): past the rule's minute, short of the
    // five that would make the queue stalled as well.
    const since = new Date(Date.now() - 120_000).toISOString();
    const made = await call<{ jobs: Job[] }>('POST', '/api/jobs/batch', {
      jobs: [1, 2, 3].map((n) => ({ kind: 'echo', queue: 'orphans', payload: { n }, runAt: since })),
    });
    const alert = `${tid('health-alert')}[data-alert="HeraldNoWorker"]`;
    await page.waitForSelector(alert);
    expect(await page.innerText(alert)).toMatch(/^HeraldNoWorker: the oldest ready job of queue orphans \(kind echo\) has waited/);
    expect((await alertsNow()).map((a) => [a.alert, a.queue])).toEqual([['HeraldNoWorker', 'orphans']]);
    // Its runbook opens on the page: what to do, from docs/alerts.md.
    await page.click(`${alert} ${tid('health-runbook')} summary`);
    expect(await page.innerText(`${alert} ${tid('health-runbook')}`)).toMatch(/start one \(npx herald worker --queues Q\)/);
    await shot(page, 'board-health-runbook.png');
    // Every page's header says so too (mutation caught: AlertsBadge left out of Header.svelte).
    await page.evaluate(() => (location.hash = '#/jobs'));
    await page.waitForSelector(`${tid('header-alerts')}[data-alerts~="HeraldNoWorker"]`);
    await page.evaluate(() => (location.hash = '#/health'));

    for (const j of made.jobs) await call('POST', `/api/jobs/${j.id}/cancel`);
    await page.waitForSelector(alert, { state: 'detached' });
    await page.waitForSelector(tid('health-no-alerts'));
    expect(await alertsNow()).toEqual([]);
    await page.waitForSelector(tid('header-alerts'), { state: 'detached' });
    expect(problems).toEqual([]);
    await close();
  });
});
