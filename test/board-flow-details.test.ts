// The smaller parts of the board's workflow views, in headless Chromium against the run's shared
// board stack (a real `herald server` and a real `herald worker`), each test in queues of its own:
// the jobs list of one flow with its ref column (each job of a fan-out shows its own ref), the
// timeline sentence of a job cancelled because a parent did not succeed (which parent, and why),
// a queue page's blocked count (jobs waiting on unfinished parents) against the real number, and
// the flow page's Retry button that is disabled and looks it (the attribute and app.css's
// disabled style, against the same button enabled). A job that must hold still is `gated`
// (test/support/gates.ts): every wait is for what the screen (or a gate) shows, and nothing
// asserts a duration. Each test names the one-line mutation it catches.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { boardApi, expectCleanTab, jobStatus, rowStatus, tabOpener, tid, useGatedBoard, type Job } from './support/board-tab.ts';
import type { Gates } from './support/gates.ts';

let server: { url: string };
let browser: Browser;
let gates: Gates;

const { call } = boardApi(() => server.url);
const openTab = tabOpener(() => browser);

useGatedBoard('shared', (stack, gated) => {
  gates = gated;
  ({ browser } = stack);
  [server] = stack.servers;
});

interface Created {
  flow: { id: string };
  jobs: (Job & { ref: string })[];
}
const createFlow = async (name: string, jobs: Record<string, unknown>[]) => {
  const made = await call<Created>('POST', '/api/flows', { name, jobs });
  return { flowId: made.flow.id, ids: Object.fromEntries(made.jobs.map((j) => [j.ref, j.id])) };
};
const node = (id: string) => tid(`flow-node-${id}`);

/** How many jobs of `queue` are in `status`, as the server's job list says (one page holds them all here). */
const listed = async (queue: string, status: string) =>
  (await call<{ jobs: Job[] }>('GET', `/api/jobs?queue=${queue}&status=${status}&limit=500`)).jobs.length;

/** What a colour written in CSS (`var(--accent)`, `#f3f4f6`) computes to on this page. */
const cssColour = (page: Page, colour: string) =>
  page.evaluate((c) => {
    const el = document.createElement('span');
    el.style.color = c;
    document.body.append(el);
    const computed = getComputedStyle(el).color;
    el.remove();
    return computed;
  }, colour);

/** The computed look of a button: what app.css's `button:disabled` rules set. */
const look = (page: Page, selector: string) =>
  page.$eval(selector, (b) => {
    const s = getComputedStyle(b);
    return { cursor: s.cursor, background: s.backgroundColor, color: s.color, border: s.borderTopColor };
  });

describe("the board's flow details", () => {
  // Catches: JobsTable.svelte's ref cell showing `{job.kind ?? ''}` in place of `{job.ref ?? ''}`
  // (each row then reads its kind: the fan-out's three all "echo"). Seen failing.
  it("lists a flow's jobs with a Ref column, each row of a fan-out showing its own ref, kept as the rows move live", async () => {
    const queue = 'board-details-refs';
    const gate = gates.create();
    const { flowId, ids } = await createFlow('refs', [
      { ref: 'root', kind: 'gated', queue, payload: { gate: gate.url } },
      ...[0, 1, 2].map((i) => ({ ref: `part-${i}`, kind: 'echo', queue, payload: { i }, dependsOn: ['root'] })),
      { ref: 'merge', kind: 'gather', queue, dependsOn: ['part-0', 'part-1', 'part-2'] },
    ]);
    await gate.reached(1);
    const tab = await openTab(server.url, `#/jobs?flow=${flowId}`);
    const { page } = tab;
    await rowStatus(page, ids.root, 'running');
    for (const ref of ['part-0', 'part-1', 'part-2', 'merge']) await rowStatus(page, ids[ref], 'blocked');
    expect(await page.$$eval(`${tid('jobs-table')} thead th`, (ths) => ths.map((th) => th.textContent?.trim()))).toContain('Ref');
    const refs = () => page.$$eval('[data-testid^="job-row-"]', (rows) => rows.map((r) => [r.getAttribute('data-testid'), r.querySelector('[data-testid="job-ref"]')?.textContent]));
    const want = Object.entries(ids).map(([ref, id]) => [`job-row-${id}`, ref]);
    expect((await refs()).sort()).toEqual(want.sort());

    // The rows move with the stream; each keeps its ref.
    gate.open();
    for (const id of Object.values(ids)) await rowStatus(page, id, 'succeeded');
    expect((await refs()).sort()).toEqual(want.sort());

    // Not filtered by a flow, the list has no Ref column.
    await page.evaluate((q) => (location.hash = `#/jobs?queue=${q}`), queue);
    await page.waitForFunction(
      () =>
        document.querySelector<HTMLInputElement>('[data-testid="filter-flow"]')?.value === '' &&
        document.querySelectorAll('[data-testid^="job-row-"]').length === 5,
    );
    expect(await page.locator(tid('job-ref')).count()).toBe(0);
    expect(await page.$$eval(`${tid('jobs-table')} thead th`, (ths) => ths.map((th) => th.textContent?.trim()))).not.toContain('Ref');
    expectCleanTab(tab);
    await tab.close();
  });

  // Catches: Timeline.svelte's `if (d.reason === 'dependency_failed') return …` as `if (false)`
  // (a cancelled child's row then says nothing of its parent). Seen failing.
  it("says on a cancelled child's timeline which parent did not succeed, live as it happens, and down the graph", async () => {
    const queue = 'board-details-cancel';
    const gate = gates.create();
    const { ids } = await createFlow('parent-failed', [
      { ref: 'gate', kind: 'gated', queue, payload: { gate: gate.url } },
      { ref: 'bad', kind: 'fail', queue, payload: { message: 'upstream answered 503' }, maxAttempts: 1, dependsOn: ['gate'] },
      { ref: 'ok', kind: 'echo', queue, payload: {} },
      { ref: 'child', kind: 'gather', queue, dependsOn: ['ok', 'bad'] },
      { ref: 'grandchild', kind: 'gather', queue, dependsOn: ['child'] },
    ]);
    await gate.reached(1);
    const tab = await openTab(server.url, `#/jobs/${ids.child}`);
    const { page } = tab;
    await jobStatus(page, 'blocked');
    expect(await page.locator(`${tid('timeline-event')}[data-type="cancelled"]`).count()).toBe(0);

    // The gate opens, `bad` runs and fails for good: the child is cancelled, and says why.
    gate.open();
    await jobStatus(page, 'cancelled');
    const row = `${tid('timeline-event')}[data-type="cancelled"]`;
    const cancelled = `${row} .summary`;
    const because = (parent: string) => `parent job ${parent} did not succeed, so this job will not run (onParentFailure: cancel)`;
    await page.waitForSelector(row);
    expect(await page.textContent(cancelled)).toBe(because(ids.bad));

    // The grandchild, opened from the child's page, was cancelled for the child (cancelled: it did not succeed either).
    await page.click(`${tid(`job-child-${ids.grandchild}`)} a`);
    await page.waitForSelector(`${tid(`job-parent-${ids.child}`)}[data-status="cancelled"]`);
    await page.waitForSelector(`${cancelled}:text-is("${because(ids.child)}")`);
    expect(await page.locator(cancelled).allTextContents()).toEqual([because(ids.child)]);

    expectCleanTab(tab);
    await tab.close();
  });

  // Catches: types.ts's COUNT_BUCKETS without its `blocked: 1,` line (the queue page then has no
  // blocked count). Seen failing.
  it("shows a queue's blocked count, live, and it is the number of its jobs waiting on unfinished parents", async () => {
    const queue = 'board-details-blocked';
    const elsewhere = 'board-details-blocked-other';
    const count = (bucket: string, n: number) => `${tid(`queue-count-${bucket}`)}:text-is("${n}")`;
    const tab = await openTab(server.url, `#/queues/${queue}`);
    const { page } = tab;
    await page.waitForSelector(count('blocked', 0));

    const gate = gates.create();
    await createFlow('blocked-count', [
      { ref: 'root', kind: 'gated', queue, payload: { gate: gate.url } },
      ...[0, 1, 2].map((i) => ({ ref: `part-${i}`, kind: 'echo', queue, payload: { i }, dependsOn: ['root'] })),
      { ref: 'merge', kind: 'gather', queue, dependsOn: ['part-0', 'part-1', 'part-2'] },
      // Blocked too, but in another queue: not this page's count.
      { ref: 'aside', kind: 'echo', queue: elsewhere, payload: {}, dependsOn: ['root'] },
    ]);
    await gate.reached(1);
    await page.waitForSelector(count('running', 1));
    await page.waitForSelector(count('blocked', 4));
    expect(await listed(queue, 'blocked')).toBe(4);
    // The same from the server's counts, on a fresh load of the page.
    await page.reload();
    await page.waitForSelector(count('running', 1));
    expect(await page.textContent(tid('queue-count-blocked'))).toBe('4');

    // The root ends: its children run, then the merge, and nothing is blocked.
    gate.open();
    await page.waitForSelector(count('succeeded', 5));
    await page.waitForSelector(count('blocked', 0));
    expect(await listed(queue, 'blocked')).toBe(0);
    expectCleanTab(tab);
    await tab.close();
  });

  // Catches: app.css's `button.primary:disabled,` line removed (the disabled Retry then wears the
  // accent blue, white text, as if it could be clicked). Seen failing. Also: FlowActions.svelte's
  // Retry as `disabled={busy}` (no `disabled` attribute while nothing failed). Seen failing.
  it('shows Retry flow disabled while nothing failed, greyed with a not-allowed cursor, then enabled in the accent colour', async () => {
    const queue = 'board-details-retry';
    const gate = gates.create();
    const { flowId, ids } = await createFlow('retry-look', [
      { ref: 'gate', kind: 'gated', queue, payload: { gate: gate.url } },
      { ref: 'bad', kind: 'fail', queue, payload: { message: 'planned' }, maxAttempts: 1, dependsOn: ['gate'] },
    ]);
    await gate.reached(1);
    const tab = await openTab(server.url, `#/flows/${flowId}`);
    const { page } = tab;
    await page.waitForSelector(`${node(ids.gate)}[data-status="running"]`);
    await page.waitForSelector(`${node(ids.bad)}[data-status="blocked"]`);

    // Nothing failed or was cancelled: Retry is disabled, and app.css's disabled look is what it wears.
    const retry = tid('flow-retry');
    await page.waitForSelector(`${retry}[disabled]`);
    expect(await page.getAttribute(retry, 'title')).toBe('No job of this flow failed or was cancelled');
    const grey = { cursor: 'not-allowed', background: await cssColour(page, '#f3f4f6'), color: await cssColour(page, '#9ca3af'), border: await cssColour(page, 'var(--line)') };
    const disabled = await look(page, retry);
    expect(disabled).toEqual(grey);
    // Cancel, enabled beside it, is not grey.
    expect(await page.getAttribute(tid('flow-cancel'), 'disabled')).toBeNull();
    expect((await look(page, tid('flow-cancel'))).cursor).toBe('pointer');

    // `bad` fails: Retry is enabled, in the accent colour with a pointer; Cancel (nothing left to cancel) greys.
    gate.open();
    await page.waitForSelector(`${node(ids.bad)}[data-status="failed"]`);
    await page.waitForSelector(`${retry}:not([disabled])`);
    const enabled = await look(page, retry);
    expect(enabled).toEqual({ cursor: 'pointer', background: await cssColour(page, 'var(--accent)'), color: await cssColour(page, '#fff'), border: await cssColour(page, 'var(--accent)') });
    for (const k of ['cursor', 'background', 'color', 'border'] as const) expect(disabled[k], k).not.toBe(enabled[k]);
    await page.waitForSelector(`${tid('flow-cancel')}[disabled]`);
    expect(await look(page, tid('flow-cancel'))).toEqual(grey);
    expectCleanTab(tab);
    await tab.close();
  });
});
