// A durable job on the board, in Chromium, against the shared stack's real server and worker: its
// page lists its steps as they finish (from the stream, without a reload), shows the signal it
// waits for with a form that sends it (Approve here; a payload that is not JSON is refused before
// sending; a viewer token's 403 is said plainly and changes nothing), then its sleep with a
// countdown. A long run of steps folds past 50, a step whose work threw shows failed, and the jobs
// list (and the queue's page, by a link) filters the jobs that wait for a signal. The job is a `gated-order` (test/fixtures/
// gated-tasks): each step waits at a test gate, so nothing here depends on timing.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { boardApi, expectCleanTab, jobStatus, rowStatus, shot, streamState, tabOpener, tid, useGatedBoard } from './support/board-tab.ts';
import type { Gates } from './support/gates.ts';

let server: { url: string };
let secured: { url: string };
let browser: Browser;
let gates: Gates;

const { call, enqueue, getEvents, waitForJob } = boardApi(() => server.url);
const openTab = tabOpener(() => browser);

useGatedBoard('shared', (stack, gated) => {
  gates = gated;
  ({ browser } = stack);
  [server, secured] = stack.servers;
});

const step = (name: string, status = 'succeeded') => `${tid('job-step')}[data-name="${name}"][data-status="${status}"]`;
const signalled = async (id: string) => (await getEvents(id)).filter((e) => e.type === 'signalled').length;

describe('a durable job on the board', () => {
  // Mutation caught: addStepEvent taking no event (the page then shows a step only when the run stops).
  it('lists its steps live, sends the signal it waits for from the form (4xx said plainly, nothing sent), then counts down its sleep', async () => {
    const gate = gates.create();
    const job = await enqueue({ kind: 'gated-order', queue: 'board-durable', payload: { gate: gate.url, steps: 2 } });
    const tab = await openTab(server.url, `#/jobs/${job.id}`);
    const { page } = tab;
    await streamState(page, 'live');
    await gate.reached(1);
    await jobStatus(page, 'running');
    expect(await page.$(tid('job-steps'))).toBeNull();

    // Each step shows as it finishes: its event at once, its result with the read that follows.
    gate.open(1);
    await page.waitForSelector(`${step('step-1')}[data-stored="true"]`);
    expect(await page.textContent(`${step('step-1')} .result`)).toBe('{"i":1}');
    gate.open(2);
    await page.waitForSelector(`${step('step-2')}[data-stored="true"]`);

    // It waits for "approve": the form shows, with Approve and Reject.
    await page.waitForSelector(`${tid('job-wait')}[data-type="signal"] ${tid('signal-approve')}`);
    expect(await page.textContent(`${tid('job-wait')} h2`)).toBe('Waiting for the signal approve');
    expect(await page.$(tid('wait-countdown'))).toBeNull(); // no timeout

    // A payload that is not JSON is refused on the page: nothing is sent.
    await page.fill(tid('signal-payload'), '{"approved": tru');
    await page.click(tid('signal-send'));
    expect(await page.textContent(tid('signal-error'))).toMatch(/^The payload is not JSON \(nothing was sent\): /);

    // A viewer token may look but not signal: the server's 403, in words, and no signal stored.
    const viewer = await openTab(secured.url, `#/jobs/${job.id}`);
    await viewer.page.fill(tid('token-input'), 'viewer-secret-0001');
    await viewer.page.click(tid('token-submit'));
    await viewer.page.click(tid('signal-approve'));
    const refused = (await viewer.page.textContent(`${tid('signal-error')} ${tid('auth-error')}`)) ?? '';
    expect(refused).toMatch(/^Your role cannot do this \(403\): a viewer token cannot POST \/api\/jobs\/:id\/signals\/:name; it needs producer or admin$/);
    expect(await signalled(job.id)).toBe(0);
    expectCleanTab(viewer);
    await viewer.close();

    // Approve: the job resumes (its steps replayed, not run again) and sleeps an hour, counted down.
    await page.click(tid('signal-approve'));
    await page.waitForSelector(tid('signal-sent'));
    const countdown = await page.waitForSelector(`${tid('job-wait')}[data-type="sleep"] ${tid('wait-countdown')}`);
    // It counts down to the wake-up the job holds.
    const sleeping = await waitForJob(job.id, (j) => (j as { waitingFor?: string }).waitingFor === 'sleep', 'sleeping');
    expect(await countdown.getAttribute('data-until')).toBe((sleeping as { wait?: { until?: string } }).wait?.until);
    expect(Number(await countdown.getAttribute('data-left-ms'))).toBeGreaterThan(0);
    expect(await countdown.textContent()).toMatch(/^wakes in (1h 0m|59m \d+s)$/);
    expect(gate.starts).toBe(1);
    expect(await page.$$eval(tid('job-step'), (els) => els.map((e) => e.getAttribute('data-name')))).toEqual(['step-1', 'step-2']);
    expect(await signalled(job.id)).toBe(1);
    await shot(page, 'board-durable.png', { fullPage: true });

    await call('POST', `/api/jobs/${job.id}/cancel`);
    await jobStatus(page, 'cancelled');
    await page.waitForSelector(tid('job-wait'), { state: 'detached' });
    expect(tab.loads).toBe(1);
    expectCleanTab(tab);
    await tab.close();
  });

  it('folds a long run of steps past 50, shows the step whose work threw, and lists the jobs waiting for a signal', async () => {
    const queue = 'board-durable-list';
    const gate = gates.create();
    gate.open();
    const long = await enqueue({ kind: 'gated-order', queue, payload: { gate: gate.url, steps: 55 } });
    const declined = await enqueue({ kind: 'gated-order', queue, payload: { gate: gate.url, steps: 1, fail: 'card declined' }, maxAttempts: 1 });
    await waitForJob(long.id, (j) => (j as { waitingFor?: string }).waitingFor === 'signal', 'waiting for its signal');
    await waitForJob(declined.id, (j) => j.status === 'failed', 'failed');

    const tab = await openTab(server.url, `#/jobs/${long.id}`);
    const { page } = tab;
    await page.waitForSelector(`${tid('job-steps')}[data-count="55"]`);
    // The page re-reads a queued job every few seconds, each time as a new object: its steps must
    // not blank and load again. Two re-reads go out while an observer watches the list. Catches:
    // the steps' reset keyed on the job object (`const id = job.id`) instead of its id.
    await page.evaluate(() => {
      const w = window as unknown as { stepsBlanked: boolean };
      w.stepsBlanked = false;
      new MutationObserver(() => {
        if (document.querySelector('[data-testid="job-steps"]')?.getAttribute('data-count') !== '55') w.stepsBlanked = true;
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    });
    const jobRead = (r: { url(): string }) => r.url().endsWith(`/api/jobs/${long.id}`);
    await page.waitForRequest(jobRead);
    await page.waitForRequest(jobRead);
    expect(await page.evaluate(() => (window as unknown as { stepsBlanked: boolean }).stepsBlanked)).toBe(false);
    expect(await page.$$eval(tid('job-step'), (els) => els.length)).toBe(50);
    expect(await page.textContent(tid('steps-unfold'))).toBe('Show 5 earlier steps');
    await page.click(tid('steps-unfold'));
    expect(await page.$$eval(tid('job-step'), (els) => els.length)).toBe(55);

    await page.goto(`${server.url}/#/jobs/${declined.id}`);
    await jobStatus(page, 'failed');
    await page.waitForSelector(step('step-1', 'failed'));
    expect(await page.textContent(tid('job-step-error'))).toBe('card declined');

    // The list, filtered from its select: only the job that waits for a signal.
    await page.goto(`${server.url}/#/jobs?queue=${queue}`);
    await rowStatus(page, declined.id, 'failed');
    await page.selectOption(tid('filter-waiting'), 'signal');
    await page.waitForFunction(() => location.hash.includes('waitingFor=signal'));
    await page.waitForSelector(`${tid('jobs-table')}[aria-busy="false"]`);
    await rowStatus(page, long.id, 'queued');
    expect(await page.$(tid(`job-row-${declined.id}`))).toBeNull();

    // The queue's page links to the same list.
    await page.goto(`${server.url}/#/queues/${queue}`);
    await page.click(tid('queue-waiting-signal'));
    await page.waitForFunction(() => location.hash.startsWith('#/jobs?') && location.hash.includes('waitingFor=signal'));
    await rowStatus(page, long.id, 'queued');

    await call('POST', `/api/jobs/${long.id}/cancel`);
    expectCleanTab(tab);
    await tab.close();
  });
});
