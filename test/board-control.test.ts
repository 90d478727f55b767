// The board's queue-control pages in headless Chromium (playwright-core, Debian's chromium),
// against a real `herald server` and `herald worker` on this file's own database: the queue page
// pauses, resumes and sets limits (and shows the server's 400) and says who last changed them, the schedules page creates,
// runs, pauses and deletes, the workers page lists the registry, and a queued job's page says in
// words why it is not running. Every step waits for what the screen shows.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestDatabase } from './support/db.ts';
import type { HeraldProcess } from './support/herald-process.ts';
import { startBoardStack, watchPage, type OwnBoardStack } from './support/board.ts';
import { shot } from './support/board-tab.ts';


let stack: OwnBoardStack;
let db: TestDatabase;
let server: { proc: HeraldProcess; url: string };
let worker: HeraldProcess;
let workerId: string;
let browser: Browser;

const tid = (id: string) => `[data-testid="${id}"]`;

beforeAll(async () => {
  stack = await startBoardStack({ workerArgs: ['--queues', 'board-q,default'] });
  ({ db, worker, workerId, browser } = stack);
  [server] = stack.servers;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

async function open(hash: string): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  ctx.setDefaultTimeout(20_000);
  const page = await ctx.newPage();
  const errors = watchPage(page);
  await page.goto(`${server.url}/${hash}`);
  return { page, errors, close: () => ctx.close() };
}

const text = (page: Page, id: string) => page.textContent(tid(id));

it('the queue page pauses and resumes a queue, sets limits, and shows a 400 inline; a held job says why', async () => {
  const { page, errors, close } = await open('#/queues/board-q');
  await page.waitForSelector(`${tid('queue-state')}:text-is("active")`);
  await page.click(tid('queue-pause'));
  await page.waitForSelector(`${tid('queue-state')}:text-is("paused")`);
  expect((await db.queue.counts('board-q'))[0].paused).toBe(true);
  // Auth is off for this server: the change is recorded, with nobody's name.
  await page.waitForSelector(`${tid('queue-updated')}:has-text("Settings last changed by someone (auth is off) at")`);

  // A job of the paused queue: its page says why it does not run.
  const { job } = await db.queue.enqueue({ kind: 'echo', queue: 'board-q' });
  const jobTab = await open(`#/jobs/${job.id}`);
  await jobTab.page.waitForSelector(`${tid('job-waiting')}[data-reason="paused"]`);
  expect(await text(jobTab.page, 'job-waiting')).toContain('Its queue "board-q" is paused. It starts when the queue is resumed.');

  // Limits: a bad value gets the server's message, a good one is saved.
  await page.fill(tid('queue-concurrency'), '0');
  await page.click(tid('queue-save'));
  await page.waitForSelector(`${tid('queue-settings-error')}:has-text("concurrency must be an integer from 1 to 10000")`);
  expect((await db.queue.counts('board-q'))[0].concurrency).toBeNull();
  await page.fill(tid('queue-concurrency'), '2');
  await page.fill(tid('queue-rate-count'), '10');
  await page.fill(tid('queue-rate-period'), '1000');
  await page.click(tid('queue-save'));
  await page.waitForSelector(`${tid('queue-limits')}:has-text("concurrency 2")`);
  expect((await db.queue.counts('board-q'))[0]).toMatchObject({ concurrency: 2, rateLimit: { count: 10, periodMs: 1000 } });

  // Resume: the held job runs, and its page follows it.
  await page.click(tid('queue-resume'));
  await page.waitForSelector(`${tid('queue-state')}:text-is("active")`);
  await jobTab.page.waitForSelector(`${tid('job-status')}:text-is("succeeded")`);
  expect(await jobTab.page.$(tid('job-waiting'))).toBeNull();

  // A job no worker takes says so.
  const { job: orphan } = await db.queue.enqueue({ kind: 'echo', queue: 'nobody-takes-this' });
  await jobTab.page.goto(`${server.url}/#/jobs/${orphan.id}`);
  await jobTab.page.waitForSelector(`${tid('job-waiting')}[data-reason="no_worker"]`);
  expect(await text(jobTab.page, 'job-waiting')).toContain('No live worker takes queue "nobody-takes-this"');
  expect(errors).toEqual([]);
  expect(jobTab.errors).toEqual([]);
  await jobTab.close();
  await close();
});

it("the queue page says who last changed the settings, in the token's words", async () => {
  await db.queue.patchQueue('alice-q', { concurrency: 4 }, { role: 'admin', label: 'alice' });
  await db.queue.patchQueue('plain-token-q', { paused: true }, { role: 'admin' });
  const { page, errors, close } = await open('#/queues/alice-q');
  await page.waitForSelector(`${tid('queue-updated')}:has-text("Settings last changed by alice (admin) at")`);
  await page.goto(`${server.url}/#/queues/plain-token-q`);
  await page.waitForSelector(`${tid('queue-updated')}:has-text("Settings last changed by an admin token at")`);
  expect(errors).toEqual([]);
  await close();
});

it("the queue page sets its dead-letter queue (a queue naming itself gets the one rule it broke), and the dead-letter queue's page says whose it is", async () => {
  await db.queue.patchQueue('dlq-src', { concurrency: 3 });
  const { page, errors, close } = await open('#/queues/dlq-src');
  await page.waitForSelector(`${tid('queue-limits')}:has-text("dead letters none")`);
  await page.fill(tid('queue-dead-letter'), 'dlq-src');
  await page.click(tid('queue-save'));
  await page.waitForSelector(`${tid('queue-settings-error')}:has-text("deadLetter must name another queue: queue dlq-src cannot be its own dead-letter queue")`);
  expect(await page.textContent(tid('queue-settings-error'))).not.toContain('characters of');
  expect((await db.queue.counts('dlq-src'))[0].deadLetter).toBeNull();

  await page.fill(tid('queue-dead-letter'), 'dlq-src.dead');
  await page.click(tid('queue-save'));
  await page.waitForSelector(`${tid('queue-dead-letter-link')}:text-is("dlq-src.dead")`);
  expect((await db.queue.counts('dlq-src'))[0].deadLetter).toBe('dlq-src.dead');
  await page.setViewportSize({ width: 1920, height: 1000 });
  await shot(page, 'board-queue-dead-letter-1920.png');
  await page.setViewportSize({ width: 1280, height: 900 });

  await page.click(tid('queue-dead-letter-link'));
  await page.waitForSelector(`${tid('queue-state')}:text-is("dead-letter")`);
  expect(await page.innerText(tid('queue-dead-letter-of'))).toMatch(/^The dead-letter queue of dlq-src: it holds a copy of each of their jobs that failed for good/);
  await shot(page, 'board-queue-dead-letter-page.png');
  expect(errors).toEqual([]);
  await close();
});

it('the schedules page creates, runs now, pauses, resumes and deletes a schedule, and shows bad cron as a 400', async () => {
  const { page, errors, close } = await open('#/schedules');
  await page.waitForSelector(`${tid('schedules-table')}:has-text("No schedules yet")`);
  await page.fill(tid('schedule-name'), 'hourly-echo');
  await page.fill(tid('schedule-cron'), 'every hour');
  await page.fill(tid('schedule-job'), JSON.stringify({ kind: 'echo', queue: 'board-q', payload: { from: 'board' } }));
  await page.click(tid('schedule-save'));
  await page.waitForSelector(`${tid('schedule-form-error')}:has-text("has 2 field(s)")`);
  expect(await db.queue.schedules()).toEqual([]);

  await page.fill(tid('schedule-cron'), '0 * * * *');
  await page.fill(tid('schedule-timezone'), 'Europe/Paris');
  await page.click(tid('schedule-save'));
  await page.waitForSelector(tid('schedule-row-hourly-echo'));
  expect(await text(page, 'schedule-next-hourly-echo')).toMatch(/\d/);

  await page.click(tid('schedule-run-hourly-echo'));
  const link = await page.waitForSelector(`${tid('schedule-last-job-hourly-echo')} a`);
  const jobId = (await link.textContent())!.replace('#', '');
  expect((await db.queue.get(jobId))).toMatchObject({ kind: 'echo', queue: 'board-q', payload: { from: 'board' } });

  await page.click(tid('schedule-pause-hourly-echo'));
  await page.waitForSelector(`${tid('schedule-row-hourly-echo')}[data-paused="true"]`);
  expect((await db.queue.schedules())[0]).toMatchObject({ paused: true, nextRunAt: null });
  await page.click(tid('schedule-resume-hourly-echo'));
  await page.waitForSelector(`${tid('schedule-row-hourly-echo')}[data-paused="false"]`);

  await page.click(tid('schedule-delete-hourly-echo'));
  await page.waitForSelector(`${tid('schedules-table')}:has-text("No schedules yet")`);
  expect(await db.queue.schedules()).toEqual([]);
  expect(errors).toEqual([]);
  await close();
});

it('the workers page lists the registry, idle workers too', async () => {
  const { page, errors, close } = await open('#/workers');
  const row = await page.waitForSelector(tid(`worker-row-${workerId}`));
  const takes = await text(page, `worker-takes-${workerId}`);
  expect(takes).toContain('board-q, default');
  expect(takes).toContain('echo');
  expect(await row.textContent()).toContain(`pid ${worker.child.pid}`);
  // An idle worker's Jobs cell says so rather than staying empty.
  expect(await text(page, `worker-idle-${workerId}`)).toMatch(/^idle/);
  expect(errors).toEqual([]);
  await close();
});
