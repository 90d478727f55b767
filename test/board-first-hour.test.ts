// What a new user meets on the board in the first hour, in headless Chromium against the run's
// shared board stack (a real `herald server`, one with HERALD_TOKENS, a real `herald worker`),
// keeping to queues of its own: the schedules page fits 1280 px, live rows read as a reload does, the job page speaks
// in sentences, the overview starts from stored history, the token prompt tells the truth, the
// queue page is the page of one queue, and the small things. Every wait is for what the screen
// (or the API) shows; nothing asserts a duration.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, demoTraffic, openBoard, sharedBoardStack, startBoardStack, watchPage, type BoardStack } from './support/board.ts';
import { waitFor } from './support/wait.ts';
import { vacuumOverdue } from '../web/src/lib/bloat.ts';

// The README's screenshots (docs/board-{overview,queue,job,schedules}.png) come from the last
// test, after a minute and a half of demo traffic on a stack of its own: `npm run screenshots`
// runs it (npm test does not).
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DOCS_SHOT = process.env.HERALD_DOCS_SCREENSHOT === '1';

let stack: BoardStack;
let server: { url: string };
let secured: { url: string };
let browser: Browser;

interface Job {
  id: string;
  status: string;
  attempt: number;
  maxAttempts: number;
}

const call = <T>(method: string, route: string, body?: unknown) => callApi<T>(server.url, method, route, body);
const enqueue = (job: Record<string, unknown>) => call<Job>('POST', '/api/jobs', job);
const list = async (q: string) => (await call<{ jobs: Job[] }>('GET', `/api/jobs?${q}`)).jobs;

const tid = (id: string) => `[data-testid="${id}"]`;

const open = (url: string, hash: string) => openBoard(browser, url, hash);

/** Every jobs-table row's cells as the screen shows them (text and tooltip), by job id. */
const tableRows = (page: Page) =>
  page.$$eval('[data-testid="jobs-table"] tbody tr[data-testid^="job-row-"]', (trs) =>
    Object.fromEntries(
      trs.map((tr) => [
        tr.getAttribute('data-testid')!.replace('job-row-', ''),
        [tr.getAttribute('data-status'), ...[...tr.querySelectorAll('td')].map((td) => `${td.textContent?.trim()}|${td.getAttribute('title') ?? ''}`)],
      ]),
    ),
  );

beforeAll(async () => {
  stack = await sharedBoardStack();
  ({ browser } = stack);
  [server, secured] = stack.servers;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

describe('the board, as a new user meets it', () => {
  it('the schedules page fits 1280 px: no row overflows, each time printed once, the job cell spaced', async () => {
    for (const [name, queue] of [['nightly-billing-report-for-all-customers', 'mail'], ['every-minute', null], ['weekly', 'reports']] as const) {
      await call('PUT', `/api/schedules/${name}`, { cron: '*/5 * * * *', timezone: 'Europe/Paris', job: { kind: 'echo', ...(queue ? { queue } : {}) } });
    }
    await call('POST', '/api/schedules/every-minute/run');
    const { page, problems, close } = await open(server.url, '#/schedules');
    await page.waitForSelector(tid('schedule-row-weekly'));
    await page.waitForSelector(`${tid('schedule-last-job-every-minute')} a`);
    const overflow = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      rows: [...document.querySelectorAll('[data-testid^="schedule-row-"]')].map((r) => ({
        row: r.getAttribute('data-testid'),
        right: Math.ceil(r.getBoundingClientRect().right),
        buttons: Math.ceil(Math.max(...[...r.querySelectorAll('button')].map((b) => b.getBoundingClientRect().right))),
      })),
    }));
    expect(overflow.page).toBeLessThanOrEqual(1280);
    for (const r of overflow.rows) {
      expect(r.right, `${r.row} overflows`).toBeLessThanOrEqual(1280);
      expect(r.buttons, `${r.row}: Edit/Delete off screen`).toBeLessThanOrEqual(1280);
    }
    expect((await page.innerText(tid('schedule-job-nightly-billing-report-for-all-customers'))).replace(/\s+/g, ' ').trim()).toBe('echo on mail');
    const next = await page.innerText(tid('schedule-next-weekly'));
    expect(next.match(/\d\d:\d\d:\d\d/g), `one time in "${next}"`).toHaveLength(1);
    expect(next).not.toMatch(/\d{4}-\d\d-\d\dT/);
    const last = await page.innerText(tid('schedule-last-run-every-minute'));
    expect(last.match(/\d\d:\d\d:\d\d/g), `one time in "${last}"`).toHaveLength(1);
    expect(problems).toEqual([]);
    await close();
    for (const name of ['nightly-billing-report-for-all-customers', 'every-minute', 'weekly']) await call('DELETE', `/api/schedules/${name}`);
  });

  it('rows built from events equal rows from a reload, field by field (arrivals, failures, a bulk retry)', async () => {
    const live = await open(server.url, '#/jobs?queue=rows');
    await live.page.waitForSelector(`${tid('stream-state')}:text-is("live")`);
    await live.page.waitForSelector(`${tid('jobs-table')}:has-text("No jobs match")`);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const made = await call<{ jobs: Job[] }>('POST', '/api/jobs/batch', {
      jobs: [
        { kind: 'echo', queue: 'rows', payload: { n: 1 } },
        { kind: 'fail', queue: 'rows', payload: { message: 'card declined by the issuing bank' }, maxAttempts: 2, priority: 3 },
        { kind: 'sleep', queue: 'rows', payload: { ms: 10 }, runAt: later, maxAttempts: 4 },
        { kind: 'fail', queue: 'rows', payload: { message: 'upstream answered 503' }, maxAttempts: 1 },
        { kind: 'echo', queue: 'rows', payload: { n: 2 }, priority: -2 },
      ],
    });
    // A job that arrives live shows its attempts limit at once.
    const scheduled = made.jobs[2].id;
    await live.page.waitForSelector(tid(`job-row-${scheduled}`));
    await live.page.waitForFunction((id) => document.querySelector(`[data-testid="job-row-${id}"] td:nth-child(5)`)?.textContent === '0/4', scheduled)
      .catch(async (e: unknown) => {
        throw new Error(`${String(e)}: ${await live.page.innerHTML(tid('jobs-table'))}`);
      });
    const settled = async (want: (j: Job) => boolean) => {
      await waitFor(async () => (await list('queue=rows&limit=50')).filter((j) => j.id !== scheduled).every(want), { what: 'jobs settled', timeoutMs: 60_000 });
      // …and the live page shows each job's status and attempts as the API does.
      for (const j of await list('queue=rows&limit=50')) {
        await live.page
          .waitForFunction(
            ([id, status, attempts]) => {
              const row = document.querySelector(`[data-testid="job-row-${id}"][data-status="${status}"]`);
              return row?.querySelector('td:nth-child(5)')?.textContent === attempts;
            },
            [j.id, j.status, `${j.attempt}/${j.maxAttempts}`],
          )
          .catch(async (e: unknown) => {
            throw new Error(`${String(e)}\napi: ${JSON.stringify(j)}\nscreen: ${JSON.stringify(await tableRows(live.page))}`);
          });
      }
    };
    await settled((j) => j.status === 'succeeded' || j.status === 'failed');

    // A bulk retry raises the limit of a job that used all its attempts (2/2 → 3/3 after it runs).
    expect(await call('POST', '/api/jobs/bulk', { action: 'retry', filter: { queue: 'rows', status: 'failed' } })).toMatchObject({ affected: 2 });
    await settled((j) => (j.status === 'failed' && j.attempt === j.maxAttempts && j.attempt >= 2) || j.status === 'succeeded');
    const fromEvents = await tableRows(live.page);
    expect(Object.keys(fromEvents)).toHaveLength(5);
    expect(fromEvents[made.jobs[1].id][5]).toMatch(/^3\/3\|/);

    const reload = await open(server.url, '#/jobs?queue=rows');
    await reload.page.waitForSelector(tid(`job-row-${scheduled}`));
    expect(fromEvents).toEqual(await tableRows(reload.page));
    expect(live.problems).toEqual([]);
    expect(reload.problems).toEqual([]);
    await live.close();
    await reload.close();
  });

  it('the job page: retried as a sentence, no stray error-name box, the end of a long error kept, Retry disabled on a succeeded job', async () => {
    const message = 'request to https://payments.example.com/v1/customers/cus_1234567890/charges/ch_0987654321 failed: 503 Service Unavailable';
    const failed = await enqueue({ kind: 'fail', queue: 'jobpage', payload: { message }, maxAttempts: 1 });
    const ok = await enqueue({ kind: 'echo', queue: 'jobpage' });
    await waitFor(async () => (await list('queue=jobpage')).every((j) => j.status === 'failed' || j.status === 'succeeded'), { what: 'jobs ended', timeoutMs: 30_000 });
    await call('POST', `/api/jobs/${failed.id}/retry`);
    await waitFor(async () => (await call<Job>('GET', `/api/jobs/${failed.id}`)).attempt === 2 && (await call<Job>('GET', `/api/jobs/${failed.id}`)).status === 'failed', { what: 'failed again', timeoutMs: 30_000 });

    const { page, problems, close } = await open(server.url, `#/jobs/${failed.id}`);
    const retried = await page.waitForSelector(`${tid('timeline-event')}[data-type="retried"]`);
    const said = await retried.innerText();
    expect(said).toMatch(/queued again by someone \(auth is off\) · up to 2 attempts/);
    expect(said).not.toMatch(/[{}"]/);
    await page.waitForSelector(tid('job-error-stack'));
    expect(await page.textContent(tid('job-error-message'))).toBe(message);
    expect(await page.$(tid('job-error-extra'))).toBeNull();
    expect(await page.isDisabled(tid('retry-button'))).toBe(false);

    // In the jobs table, the cut keeps the cause at the end.
    await page.goto(`${server.url}/#/jobs?queue=jobpage&status=failed`);
    const cut = await page.textContent(`${tid(`job-row-${failed.id}`)} ${tid('row-error')}`);
    expect(cut).toMatch(/^request to https:/);
    expect(cut).toMatch(/503 Service Unavailable$/);

    await page.goto(`${server.url}/#/jobs/${ok.id}`);
    await page.waitForSelector(`${tid('job-status')}:text-is("succeeded")`);
    expect(await page.isDisabled(tid('retry-button'))).toBe(true);
    expect(await page.isDisabled(tid('cancel-button'))).toBe(true);
    expect(problems).toEqual([]);
    await close();
  });

  it('the overview starts from stored history: rate tiles and the 5-minute charts are not flat after a reload', async () => {
    await call('POST', '/api/jobs/batch', { jobs: Array.from({ length: 40 }, (_, n) => ({ kind: 'echo', queue: 'hist', payload: { n } })) });
    // The servers and the worker roll history up every 10 s or so: wait until it holds the 40.
    await waitFor(async () => {
      const { buckets } = await call<{ buckets: { succeeded: number }[] }>('GET', '/api/queues/hist/stats?range=1h');
      return buckets.reduce((n, b) => n + b.succeeded, 0) >= 40;
    }, { what: 'history of hist rolled up', timeoutMs: 60_000 });
    const { page, problems, close } = await open(server.url, '#/');
    const rate = await page.waitForSelector(`${tid('kpi-succeeded-rate')}:not(:text-is("0/s")):not(:text-is("—"))`);
    expect(await rate.textContent()).toMatch(/^[\d.]+\/s$/);
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="chart-rates"]')?.getAttribute('data-nonzero')) > 0);
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="chart-latency"]')?.getAttribute('data-nonzero')) > 0);
    // The live feed shows the events from before the reload, not "Waiting for events…"
    // (mutation caught: the store's #seedRecent call left out of #loadQueues). The other files'
    // jobs on the shared stack move the newest events on, and the stream brings only what comes
    // after the page opened: so look for an event published before a reload, trying again if
    // more than a feed's worth came between the two reads.
    await waitFor(async () => {
      const before = await call<{ events: { eventId: string }[] }>('GET', '/api/events/recent?limit=40');
      await page.reload();
      await page.waitForSelector(`${tid('recent-events')} tbody tr[data-event-id]`, { timeout: 10_000 }).catch(() => null);
      const shown = await page.$$eval(`${tid('recent-events')} tbody tr[data-event-id]`, (trs) => trs.map((tr) => tr.getAttribute('data-event-id')));
      return before.events.some((e) => shown.includes(e.eventId));
    }, { what: 'an event published before the reload in the live feed', timeoutMs: 90_000 });
    // The live events table: the Attempt header sits over its values.
    await enqueue({ kind: 'echo', queue: 'hist' });
    await page.waitForSelector(`${tid('recent-events')} tbody td.num`);
    const align = await page.$$eval(`${tid('recent-events')} th`, (ths) => getComputedStyle(ths.find((th) => th.textContent === 'Attempt')!).textAlign);
    const valueAlign = await page.$eval(`${tid('recent-events')} tbody td.num`, (td) => getComputedStyle(td).textAlign);
    expect(align).toBe(valueAlign);
    expect(problems).toEqual([]);
    await close();
  });

  it('the enqueue form sends group, tags, an idempotency key and dependsOn', async () => {
    const parent = await enqueue({ kind: 'sleep', queue: 'form', payload: { ms: 1 } });
    const { page, problems, close } = await open(server.url, '#/enqueue?kind=echo&queue=form');
    await page.fill(tid('enqueue-group'), 'tenant-7');
    await page.fill(tid('enqueue-tags'), 'vip, eu');
    await page.fill(tid('enqueue-idempotency-key'), 'form-once');
    await page.fill(tid('enqueue-depends-on'), parent.id);
    await page.click(tid('enqueue-submit'));
    const id = (await (await page.waitForSelector(tid('enqueue-success'))).textContent())!.replace('Job #', '');
    const job = await call<Job & { group: string; tags: string[]; idempotencyKey: string; dependsOn: string[] }>('GET', `/api/jobs/${id}`);
    expect(job).toMatchObject({ group: 'tenant-7', tags: ['vip', 'eu'], idempotencyKey: 'form-once', dependsOn: [parent.id] });
    // The same key again is the same job.
    await page.click(tid('enqueue-submit'));
    expect(await (await page.waitForSelector(`${tid('enqueue-existing')} a`)).textContent()).toBe(`job #${id}`);
    expect((await list('queue=form&kind=echo')).map((j) => j.id)).toEqual([id]);
    expect(problems).toEqual([]);
    await close();
  });

  it('the token prompt: no fake zeros behind it, the server\'s words once, and no "Token ✓" for a wrong token', async () => {
    const { page, problems, close } = await open(secured.url, '#/');
    await page.waitForSelector(tid('token-input'));
    for (const k of ['running', 'queued', 'scheduled', 'failed', 'succeeded-rate']) expect(await page.textContent(tid(`kpi-${k}`))).toBe('—');
    const first = await page.textContent(tid('auth-error'));
    expect(first).toMatch(/^This route needs a token: send Authorization: Bearer TOKEN\. Enter a token to continue\.$/);

    await page.fill(tid('token-input'), 'not-a-token');
    await page.click(tid('token-submit'));
    const said = await page.waitForSelector(`${tid('auth-error')}:has-text("Unknown token")`);
    expect((await said.textContent())!.match(/unknown token/gi)).toHaveLength(1);
    expect(await page.textContent(tid('token-button'))).not.toContain('✓');
    expect(await page.textContent(tid('kpi-running'))).toBe('—');

    await page.fill(tid('token-input'), 'viewer-secret-0001');
    await page.click(tid('token-submit'));
    await page.waitForSelector(tid('token-form'), { state: 'detached' });
    await page.waitForSelector(`${tid('token-button')}:text-is("Token ✓")`);
    await page.waitForSelector(`${tid('kpi-running')}:not(:text-is("—"))`);
    expect(problems).toEqual([]);
    await close();
  });

  it('the queue page: its counts, history charts and newest jobs, live', async () => {
    const { page, problems, close } = await open(server.url, '#/queues/hist');
    await page.waitForSelector(`${tid('history')}[data-loaded^="hist/"]`);
    await page.waitForSelector(`${tid('newest-jobs')} tr[data-status="succeeded"]`);
    expect(await page.$$(`${tid('history-counts')} canvas`)).toHaveLength(1);
    const job = await enqueue({ kind: 'echo', queue: 'hist', payload: { live: true } });
    await page.waitForSelector(`${tid(`newest-job-${job.id}`)}[data-status="succeeded"]`);
    expect(await page.$$(`${tid('newest-jobs')} tbody tr`)).toHaveLength(10);
    expect(problems).toEqual([]);
    await close();
  });

  it('the small things: "scheduled" in the status filter, the dead-tuple bar, and no console warning across every page', async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const ahead = await enqueue({ kind: 'echo', queue: 'small', runAt: later });
    const now = await enqueue({ kind: 'sleep', queue: 'small', payload: { ms: 1 } });
    const { page, problems, close } = await open(server.url, '#/jobs?queue=small');
    await page.waitForSelector(tid(`job-row-${now.id}`));
    await page.selectOption(tid('filter-status'), 'scheduled');
    await page.waitForSelector(tid(`job-row-${ahead.id}`));
    await page.waitForSelector(tid(`job-row-${now.id}`), { state: 'detached' });

    await page.goto(`${server.url}/#/health`);
    await page.waitForSelector(tid('health-tables'));
    const bars = await page.$$eval('[data-testid^="table-row-"]', (rows) =>
      rows.map((r) => {
        const n = (s: string | null | undefined) => Number((s ?? '').replace(/,/g, ''));
        const cells = r.querySelectorAll('td');
        return { live: n(cells[1].textContent), dead: n(cells[2].textContent), hot: r.querySelector('[data-hot]')?.getAttribute('data-hot') };
      }),
    );
    for (const b of bars) expect(b.hot, JSON.stringify(b)).toBe(String(vacuumOverdue(b.live, b.dead)));

    // Every page, back and forth: Svelte warns (derived_inert and the like) on the console.
    for (const hash of ['#/', '#/queues/hist', '#/jobs', `#/jobs/${ahead.id}`, '#/schedules', '#/workers', '#/health', '#/queues/small', '#/', '#/enqueue', '#/jobs?queue=small']) {
      await page.evaluate((h) => (location.hash = h), hash);
      await page.waitForSelector('main > *');
      await page.waitForLoadState();
    }
    await page.waitForSelector(`${tid('jobs-table')} tr[data-status]`);
    expect(problems).toEqual([]);
    await close();
  });

  it.runIf(DOCS_SHOT)('README screenshots: overview, queue, job and schedules pages after demo traffic', async () => {
    const schedules = [
      ['nightly-report', '0 2 * * *', 'Europe/Paris', { kind: 'echo', queue: 'reports', payload: { report: 'daily' } }],
      ['hourly-cleanup', '0 * * * *', 'UTC', { kind: 'sleep', queue: 'images', payload: { ms: 500 } }],
      ['webhook-sweep', '*/5 * * * *', 'UTC', { kind: 'echo', queue: 'webhooks' }],
      ['weekly-digest', '0 8 * * 1', 'America/New_York', { kind: 'echo', queue: 'emails', payload: { digest: true } }],
    ] as const;
    // A stack of its own: only the demo's queues on the pictures.
    const own = await startBoardStack({ workerArgs: ['--concurrency', '20'] });
    const base = own.servers[0].url;
    const call = <T>(method: string, route: string, body?: unknown) => callApi<T>(base, method, route, body);
    for (const [name, cron, timezone, job] of schedules) await call('PUT', `/api/schedules/${name}`, { cron, timezone, job, paused: name === 'weekly-digest' });
    await call('POST', '/api/schedules/webhook-sweep/run');
    await call('POST', '/api/schedules/nightly-report/run');
    const queues = ['emails', 'reports', 'images', 'webhooks'];
    const traffic = demoTraffic((jobs) => call('POST', '/api/jobs/batch', { jobs }), queues);
    const context = await own.browser.newContext({ viewport: { width: 1280, height: 1020 } });
    context.setDefaultTimeout(30_000);
    const page = await context.newPage();
    const problems = watchPage(page);
    const save = async (name: string, fullPage = false) => {
      await page.waitForTimeout(1_500); // the charts redraw once a second: let one redraw happen
      const to = path.join(ROOT, 'docs', name);
      await page.screenshot({ path: to, fullPage });
      console.log(JSON.stringify({ docsScreenshot: path.relative(ROOT, to), bytes: fs.statSync(to).size }));
    };
    try {
      await new Promise((r) => setTimeout(r, 90_000)); // history to show: pacing, not waiting
      // Opened after the traffic began: the charts start from stored history, then go on live.
      await page.goto(`${base}/#/`);
      for (const q of queues) await page.waitForSelector(tid(`queue-row-${q}`));
      await page.waitForFunction(() => Number(document.querySelector('[data-testid="chart-rates"]')?.getAttribute('data-nonzero')) > 100);
      await page.waitForSelector(`${tid('recent-events')} >> text=claimed`);
      await save('board-overview.png');

      await page.goto(`${base}/#/queues/emails`);
      await page.waitForSelector(`${tid('history')}[data-loaded^="emails/1h/"]`);
      await page.waitForSelector(`${tid('newest-jobs')} tr[data-status]`);
      await save('board-queue.png', true);

      const job = await call<Job>('POST', '/api/jobs', { kind: 'progress', queue: 'reports', priority: 10, payload: { steps: 20, stepMs: 600 } });
      await page.goto(`${base}/#/jobs/${job.id}`);
      await page.waitForFunction(() => Number(document.querySelector('[data-testid="job-progress"]')?.getAttribute('data-percent')) >= 40);
      await save('board-job.png');

      await page.goto(`${base}/#/schedules`);
      await page.waitForSelector(`${tid('schedule-last-job-webhook-sweep')} a`);
      await save('board-schedules.png');
      expect(problems).toEqual([]);
    } finally {
      await traffic.stop();
      await own.stop();
    }
  }, 240_000);
});
