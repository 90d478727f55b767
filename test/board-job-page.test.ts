// A job's page on the board, in a real browser: headless Debian Chromium driven by
// playwright-core, against the run's shared board stack (a real `herald server` and a real
// `herald worker`), in queues of this file's own. The page follows progress and shows every event; retry, run now
// and cancel go through a confirm; untrusted text stays text; with HERALD_TOKENS (a second server) it asks
// for a token, and a viewer's retry is a plain 403. Everything is awaited on what the screen
// shows; nothing sleeps to wait for a state, and nothing asserts a duration. A job the test must
// see running or mid-way is a `gated` job (test/support/gates.ts).
//
// Artifacts: test-artifacts/board-*.png (ignored by git).
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { boardApi, expectCleanTab, holdReplies, jobStatus, percentWhere, shot, streamLog, streamState, tabOpener, tid, timelineIds, useGatedBoard } from './support/board-tab.ts';
import type { Gate, Gates } from './support/gates.ts';
import { waitFor } from './support/wait.ts';

const XSS = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2">`;

let server: { url: string };
let browser: Browser;
let gates: Gates;
/** The shared stack's second server, with HERALD_TOKENS set. */
let secured: { url: string };

const { enqueue, getJob, getEvents, waitForJob } = boardApi(() => server.url);
const openTab = tabOpener(() => browser);

useGatedBoard('shared', (stack, gated) => {
  gates = gated;
  ({ browser } = stack);
  [server, secured] = stack.servers;
});

describe('the board in Chromium', () => {
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

  // A reply read before events the page already took must not undo them. The page opens at
  // `first` (unheld) and then reads again at `then`, a read held until the tab's stream has
  // brought the job to 60 %: the page must end at 60 %, not at what the server had read (the
  // job page shows no bar before its read; the table, busy while it reads, already shows one).
  type Late = { first: string; shown?: string; then: string; isRead: (url: URL) => boolean; settled?: string; bar: string };
  const lateReply = async (job: { id: string }, gate: Gate, late: Late) => {
    let streamed!: Awaited<ReturnType<typeof streamLog>>;
    const tab = await openTab(server.url, late.first, undefined, async (p) => {
      streamed = await streamLog(p);
    });
    const { page } = tab;
    await streamState(page, 'live');
    if (late.shown) await page.waitForSelector(late.shown);
    const held = await holdReplies(page, late.isRead);
    await page.evaluate((h) => (location.hash = h), late.then);
    await held.read;
    gate.open(3); // 20, 40, 60 %, then the job waits at step 4
    await waitFor(async () => {
      if ((await getJob(job.id)).progress?.percent !== 60) return false;
      return (await getEvents(job.id)).filter((e) => e.type === 'progress').every((e) => streamed.ids.has(e.eventId));
    }, { what: 'the tab to receive every progress event up to 60 %' });
    held.release();
    if (late.settled) await page.waitForSelector(late.settled); // the reply is on screen
    await page.waitForSelector(`${late.bar}[data-percent="60"]`, { timeout: 20_000 });
    gate.open();
    await streamed.stop();
    expectCleanTab(tab);
    await tab.close();
  };

  it("a late answer to a page's read does not undo the progress the stream brought meanwhile: the job page and the jobs table", async () => {
    const started = async (queue: string) => {
      const gate = gates.create();
      const job = await enqueue({ kind: 'gated', queue, payload: { gate: gate.url, steps: 5 } });
      await gate.reached(1); // running, no progress yet
      return { job, gate };
    };
    const one = await started('board-late');
    await lateReply(one.job, one.gate, { first: '#/', then: `#/jobs/${one.job.id}`, isRead: (u) => u.pathname === `/api/jobs/${one.job.id}`, bar: tid('job-progress') });
    // The table shows the job, then reads its page again (another page size) while the job moves.
    const row = await started('board-late-table');
    await lateReply(row.job, row.gate, {
      first: '#/jobs?queue=board-late-table',
      shown: tid(`job-row-${row.job.id}`),
      then: '#/jobs?queue=board-late-table&limit=20',
      isRead: (u) => u.pathname === '/api/jobs',
      settled: `${tid('jobs-table')}[aria-busy="false"]`,
      bar: `${tid(`job-row-${row.job.id}`)} ${tid('job-progress')}`,
    });
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

  it("runs a scheduled job now from its page, and a queue's scheduled jobs with the bulk action; each promoted event is on the timeline", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const job = await enqueue({ kind: 'echo', queue: 'board', runAt: later });
    const done = await enqueue({ kind: 'echo', queue: 'board' });
    await waitForJob(done.id, (j) => j.status === 'succeeded', 'succeeded');
    // A finished job cannot be run now; its button says why.
    const finished = await openTab(server.url, `#/jobs/${done.id}`);
    await jobStatus(finished.page, 'succeeded');
    expect(await finished.page.isDisabled(tid('run-now-button'))).toBe(true);
    expect(await finished.page.getAttribute(tid('run-now-button'), 'title')).toMatch(/^Only a queued job waiting out its backoff or its run-at time/);
    await finished.close();

    const tab = await openTab(server.url, `#/jobs/${job.id}`);
    const { page } = tab;
    await page.waitForSelector(`${tid('job-waiting')}[data-reason="scheduled"]`);
    expect(await page.isDisabled(tid('retry-button'))).toBe(true);
    await page.click(tid('run-now-button'));
    await page.waitForSelector(`${tid('confirm-bar')}:has-text("Run job #${job.id} now?")`);
    await page.click(tid('confirm-button'));
    await page.waitForSelector(`${tid('action-done')}:text-is("Run now: the job is due at once.")`);
    await jobStatus(page, 'succeeded');
    const promoted = await page.waitForSelector(`${tid('timeline-event')}[data-type="promoted"]`);
    expect(await promoted.textContent()).toMatch(/run now by someone \(auth is off\) · was due/);
    await shot(page, 'board-run-now.png', { fullPage: true });
    expectCleanTab(tab);
    await tab.close();

    const ids = await Promise.all([1, 2, 3].map(async () => (await enqueue({ kind: 'echo', queue: 'job-page-run-now', runAt: later })).id));
    const list = await openTab(server.url, '#/jobs?queue=job-page-run-now&status=scheduled');
    await list.page.waitForFunction(() => document.querySelectorAll('[data-testid^="job-row-"]').length === 3);
    await list.page.selectOption(tid('bulk-action'), 'run_now');
    await list.page.click(tid('bulk-preview'));
    expect(await (await list.page.waitForSelector(tid('bulk-question'))).textContent()).toBe('run now 3 scheduled jobs in queue job-page-run-now?');
    expect(await list.page.getAttribute(tid('bulk-would'), 'data-would')).toBe('3');
    await list.page.click(tid('bulk-confirm'));
    await list.page.waitForSelector(`${tid('bulk-result')}[data-affected="3"]`);
    await list.page.waitForSelector(`${tid('bulk-result')}[data-changed="3"]`);
    for (const id of ids) await waitForJob(id, (j) => j.status === 'succeeded', 'succeeded after run now');
    await shot(list.page, 'board-bulk-run-now.png');
    expectCleanTab(list);
    await list.close();
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

    await page.fill(tid('token-input'), 'viewer-secret-0001');
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
});
