// The board's workflow pages, in headless Chromium against the run's shared board stack (a real
// `herald server` and a real `herald worker`; this file's flows are the only ones there): the
// Flows list, a flow's DAG following the stream, a wide fan-out folded into one group node, and
// the job page of a blocked child. The jobs that
// must hold still are `gated` (test/support/gates.ts): each runs until the test opens its gate,
// so every wait is for what the screen (or a gate) shows, and nothing asserts a duration.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, openBoard, sharedBoardStack, type BoardStack } from './support/board.ts';
import { Gates } from './support/gates.ts';
import { waitFor } from './support/wait.ts';

let stack: BoardStack;
let url: string;
let browser: Browser;
let gates: Gates;

interface Job {
  id: string;
  ref: string;
  status: string;
}
interface Created {
  flow: { id: string };
  jobs: Job[];
}

const call = <T>(method: string, route: string, body?: unknown) => callApi<T>(url, method, route, body);
const createFlow = (name: string, jobs: Record<string, unknown>[]) => call<Created>('POST', '/api/flows', { name, jobs });
const tid = (id: string) => `[data-testid="${id}"]`;
const node = (id: string) => tid(`flow-node-${id}`);
const byRef = (made: Created) => Object.fromEntries(made.jobs.map((j) => [j.ref, j.id]));

/** The colour a status has on the board (app.css --st-*), as the browser computes it. */
const statusColour = (page: Page, status: string) =>
  page.evaluate((s) => {
    const el = document.createElement('span');
    el.style.color = `var(--st-${s})`;
    document.body.append(el);
    const colour = getComputedStyle(el).color;
    el.remove();
    return colour;
  }, status);
/** The outline colour of a node box on the flow page. */
const nodeStroke = (page: Page, jobId: string) => page.$eval(`${node(jobId)} rect`, (r) => getComputedStyle(r).stroke);

beforeAll(async () => {
  gates = await Gates.start();
  stack = await sharedBoardStack();
  ({ browser } = stack);
  url = stack.servers[0].url;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await gates?.close();
});

describe('the board, for workflows', () => {
  it('lists a new flow live, draws fetch → 3 × transform → merge in status colours, and moves a node to succeeded without a reload', async () => {
    const { page, problems, close } = await openBoard(browser, url, '#/flows');
    // The list has loaded before the flow is made, so its row can only come from the stream. Other
    // files on the shared stack make flows too: the list need not be empty.
    await page.waitForSelector(`${tid('flows-table')}[aria-busy="false"]`);

    const [fetchGate, ...transformGates] = [gates.create(), gates.create(), gates.create(), gates.create()];
    const made = await createFlow('pipeline', [
      { ref: 'fetch', kind: 'gated', payload: { gate: fetchGate.url } },
      ...transformGates.map((g, i) => ({ ref: `transform-${i}`, kind: 'gated', payload: { gate: g.url }, dependsOn: ['fetch'] })),
      { ref: 'merge', kind: 'gather', dependsOn: ['transform-0', 'transform-1', 'transform-2'] },
    ]);
    const flowId = made.flow.id;
    const ids = byRef(made);

    // The list follows the stream: the new flow appears, named, with its jobs by status.
    const row = tid(`flow-row-${flowId}`);
    await page.waitForSelector(row);
    expect(await page.innerText(row)).toContain('pipeline');
    await fetchGate.reached(1);
    await page.waitForSelector(`${tid(`flow-counts-${flowId}`)} [data-count="running"]`);
    expect(await page.innerText(tid(`flow-counts-${flowId}`))).toMatch(/1 running[\s\S]*4 blocked/);
    expect(await page.innerText(tid(`flow-status-${flowId}`))).toBe('running');

    await page.click(tid(`flow-link-${flowId}`));
    await page.waitForURL((u) => u.hash === `#/flows/${flowId}`);
    await page.waitForSelector(`${node(ids.fetch)}[data-status="running"]`);
    expect(await page.locator(`${tid('flow-graph')} a[data-testid^="flow-node-"]`).count()).toBe(5);
    const edges = await page.$$eval(tid('flow-edge'), (es) => es.map((e) => `${e.getAttribute('data-from')}>${e.getAttribute('data-to')}`).sort());
    const want = [0, 1, 2].flatMap((i) => [`${ids.fetch}>${ids[`transform-${i}`]}`, `${ids[`transform-${i}`]}>${ids.merge}`]).sort();
    expect(edges).toEqual(want);
    for (const ref of ['transform-0', 'transform-1', 'transform-2', 'merge']) {
      expect(await page.getAttribute(node(ids[ref]), 'data-status')).toBe('blocked');
      expect(await nodeStroke(page, ids[ref])).toBe(await statusColour(page, 'blocked'));
    }
    expect(await nodeStroke(page, ids.fetch)).toBe(await statusColour(page, 'running'));
    // blocked has a colour of its own
    const colours = await Promise.all(['queued', 'scheduled', 'running', 'succeeded', 'failed', 'cancelled', 'blocked'].map((s) => statusColour(page, s)));
    expect(new Set(colours).size).toBe(7);

    // Live: the page is not reloaded (the marker survives) and statuses move no layout.
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    const layouts = await page.getAttribute(tid('flow-graph'), 'data-layouts');
    fetchGate.open();
    await page.waitForSelector(`${node(ids.fetch)}[data-status="succeeded"]`);
    expect(await nodeStroke(page, ids.fetch)).toBe(await statusColour(page, 'succeeded'));
    await Promise.all(transformGates.map((g) => g.reached(1)));
    for (let i = 0; i < 3; i++) await page.waitForSelector(`${node(ids[`transform-${i}`])}[data-status="running"]`);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);
    expect(await page.getAttribute(tid('flow-graph'), 'data-layouts')).toBe(layouts);
    expect(await page.innerText(tid('flow-counts'))).toMatch(/3 running[\s\S]*1 succeeded[\s\S]*1 blocked/);

    // The blocked merge's page: what it waits for, its parents with their statuses, its flow.
    transformGates[0].open();
    await page.waitForSelector(`${node(ids['transform-0'])}[data-status="succeeded"]`);
    await page.click(node(ids.merge));
    await page.waitForURL((u) => u.hash === `#/jobs/${ids.merge}`);
    await page.waitForSelector(tid('job-waiting-parents'));
    // shown only once the parents are read: never a count of none
    expect(await page.innerText(tid('job-waiting-parents'))).toContain('waiting for 2 of 3 parents');
    for (const [i, status] of [[0, 'succeeded'], [1, 'running'], [2, 'running']] as const) {
      const parent = tid(`job-parent-${ids[`transform-${i}`]}`);
      expect(await page.getAttribute(parent, 'data-status')).toBe(status);
      expect(await page.getAttribute(`${parent} a`, 'href')).toBe(`#/jobs/${ids[`transform-${i}`]}`);
    }
    expect(await page.getAttribute(`${tid('job-flow')} a`, 'href')).toBe(`#/flows/${flowId}`);
    transformGates[1].open();
    await page.waitForSelector(`${tid(`job-parent-${ids['transform-1']}`)}[data-status="succeeded"]`);
    await page.waitForSelector(`${tid('job-waiting-parents')} >> text=waiting for 1 of 3 parents`);
    transformGates[2].open();
    await page.waitForSelector(`${tid('job-status')} >> text=succeeded`);
    expect(await page.locator(tid('job-waiting-parents')).count()).toBe(0);

    // A parent's page lists the merge as its child.
    await page.click(`${tid(`job-parent-${ids['transform-2']}`)} a`);
    await page.waitForSelector(`${tid(`job-child-${ids.merge}`)}[data-status="succeeded"]`);
    expect(problems).toEqual([]);
    await close();
  });

  it('draws a fan-out of 300 as one group node with its status bar, which opens into its jobs on a click', async () => {
    const rootGate = gates.create();
    const parts = Array.from({ length: 300 }, (_, i) => ({ ref: `part-${i}`, kind: 'echo', payload: { i }, dependsOn: ['root'] }));
    const made = await createFlow('fan', [
      { ref: 'root', kind: 'gated', payload: { gate: rootGate.url } },
      ...parts,
      { ref: 'merge', kind: 'gather', dependsOn: parts.map((p) => p.ref) },
    ]);
    const ids = byRef(made);
    // A group is named by its smallest job id.
    const first = parts.map((p) => Number(ids[p.ref])).sort((a, b) => a - b)[0];
    const group = `flow-group-g${first}`;
    const toggle = tid(`flow-group-toggle-g${first}`);
    await rootGate.reached(1);

    const { page, problems, close } = await openBoard(browser, url, `#/flows/${made.flow.id}`);
    await page.waitForSelector(tid(group));
    expect(await page.getAttribute(tid(group), 'data-count')).toBe('300');
    expect(await page.getAttribute(tid(group), 'data-open')).toBe('false');
    expect(await page.textContent(toggle)).toContain('300 × echo');
    expect(await page.locator(`${tid('flow-graph')} a[data-testid^="flow-node-"]`).count()).toBe(2);
    expect(await page.locator(tid('flow-edge')).count()).toBe(2);
    const bar = await page.$$eval(`${tid(group)} rect.seg`, (rs) => rs.map((r) => [r.getAttribute('data-status'), r.getAttribute('data-count')]));
    expect(bar).toEqual([['blocked', '300']]);

    await page.click(toggle);
    await page.waitForSelector(`${tid(group)}[data-open="true"]`);
    await expect.poll(() => page.locator(`${tid('flow-graph')} a[data-testid^="flow-node-"]`).count(), { timeout: 30_000 }).toBe(302);
    expect(await page.getAttribute(node(ids['part-299']), 'data-status')).toBe('blocked');
    expect(await page.locator(tid('flow-edge')).count()).toBe(2);

    // One of the 300: its page says it waits for its one parent, and links it.
    await page.click(node(ids['part-7']));
    await page.waitForURL((u) => u.hash === `#/jobs/${ids['part-7']}`);
    await page.waitForSelector(tid('job-waiting-parents'));
    expect(await page.innerText(tid('job-waiting-parents'))).toContain('waiting for 1 of 1 parent');
    expect(await page.getAttribute(`${tid(`job-parent-${ids.root}`)}`, 'data-status')).toBe('running');

    // The jobs table filters by blocked, and the badge wears the blocked colour. (This flow's jobs
    // only: other files' blocked jobs on the shared stack may be released while the test looks.)
    await page.goto(`${url}/#/jobs?status=blocked&flow=${made.flow.id}`);
    await page.waitForSelector('[data-testid^="job-row-"][data-status="blocked"]');
    expect(await page.inputValue(tid('filter-status'))).toBe('blocked');
    const badge = await page.$eval('[data-testid^="job-row-"] .badge', (b) => getComputedStyle(b).color);
    expect(badge).toBe(await statusColour(page, 'blocked'));

    // Cancelled, not run: the 300 would hold the shared worker's slots from other files' jobs.
    expect(await call<{ affected: number }>('POST', `/api/flows/${made.flow.id}/cancel`)).toEqual({ affected: 302 });
    expect(problems).toEqual([]);
    await close();
  });

  it('leaves the Flows list while its read is in flight, and the late reply changes nothing on the next page', async () => {
    const { page, problems, close } = await openBoard(browser, url, '#/flows');
    await page.waitForSelector(`${tid('flows-table')}[aria-busy="false"]`);
    // The next read of the list is held until the page has moved on.
    let held!: (release: () => Promise<void>) => void;
    const heldRead = new Promise<() => Promise<void>>((r) => (held = r));
    await page.route((u) => u.pathname === '/api/flows', (route) => held(() => route.continue()));
    await page.selectOption(tid('flows-filter-status'), 'running');
    const release = await heldRead;
    await page.evaluate(() => (location.hash = '#/'));
    await page.waitForSelector(tid('queues-table'));
    const replied = page.waitForEvent('requestfinished', (r) => new URL(r.url()).pathname === '/api/flows');
    await release();
    await replied;
    // The reply's continuation runs in the page's next tasks: a round trip through a timer and a
    // frame comes after them.
    await page.evaluate(() => new Promise((r) => setTimeout(() => requestAnimationFrame(r), 0)));
    // Reading the filter (a $derived of the destroyed list) after the await: Svelte warns derived_inert.
    expect(problems).toEqual([]);
    await close();
  });

  it("lists a flow's jobs in the jobs table from its page, and follows them live", async () => {
    const gate = gates.create();
    const made = await createFlow('listed', [
      { ref: 'root', kind: 'gated', payload: { gate: gate.url } },
      { ref: 'leaf', kind: 'gather', dependsOn: ['root'] },
    ]);
    await createFlow('other', [{ ref: 'solo', kind: 'gather' }]);
    const ids = byRef(made);
    const { page, problems, close } = await openBoard(browser, url, `#/flows/${made.flow.id}`);
    await page.click(tid('flow-jobs-link'));
    await page.waitForURL((u) => u.hash === `#/jobs?flow=${made.flow.id}`);
    await page.waitForSelector(`${tid(`job-row-${ids.leaf}`)}[data-status="blocked"]`);
    expect(await page.inputValue(tid('filter-flow'))).toBe(made.flow.id);
    const listed = await page.$$eval('[data-testid^="job-row-"]', (rs) => rs.map((r) => r.getAttribute('data-testid')));
    expect(listed.sort()).toEqual([`job-row-${ids.leaf}`, `job-row-${ids.root}`].sort());
    await gate.reached(1);
    gate.open();
    await page.waitForSelector(`${tid(`job-row-${ids.leaf}`)}[data-status="succeeded"]`);
    expect(problems).toEqual([]);
    await close();
  });

  it("cancels a flow from its page, then retries it from where it broke, the graph following live", async () => {
    const gate = gates.create();
    const made = await createFlow('retry-me', [
      { ref: 'root', kind: 'gated', payload: { gate: gate.url } },
      { ref: 'mid', kind: 'gather', dependsOn: ['root'] },
      { ref: 'leaf', kind: 'gather', dependsOn: ['mid'] },
    ]);
    const ids = byRef(made);
    const { page, problems, close } = await openBoard(browser, url, `#/flows/${made.flow.id}`);
    await gate.reached(1);
    await page.waitForSelector(`${node(ids.root)}[data-status="running"]`);
    // A blocked job can be cancelled from its own page as well (the API allows it).
    await page.click(node(ids.mid));
    await page.waitForSelector(`${tid('job-status')} >> text=blocked`);
    expect(await page.isDisabled(tid('cancel-button'))).toBe(false);
    await page.goBack();
    await page.waitForSelector(`${node(ids.root)}[data-status="running"]`);
    // Nothing failed yet: only Cancel is offered.
    expect(await page.isDisabled(tid('flow-retry'))).toBe(true);
    await page.click(tid('flow-cancel'));
    await page.waitForSelector(`${tid('confirm-bar')}:has-text("Its 3 jobs that have not ended")`);
    await page.click(tid('confirm-button'));
    await page.waitForSelector(`${tid('flow-action-done')}:has-text("Cancelled 3 jobs.")`);
    // The running root's handler is signalled and ends cancelled; the blocked ones at once.
    for (const ref of ['root', 'mid', 'leaf']) await page.waitForSelector(`${node(ids[ref])}[data-status="cancelled"]`);
    await page.waitForSelector(`${tid('flow-status')}:has-text("failed")`);
    expect(await page.isDisabled(tid('flow-cancel'))).toBe(true);

    await page.click(tid('flow-retry'));
    await page.waitForSelector(`${tid('confirm-bar')}:has-text("Its 3 jobs that failed or were cancelled")`);
    await page.click(tid('confirm-button'));
    await page.waitForSelector(`${tid('flow-action-done')}:has-text("Retried: 3 jobs run again.")`);
    // The root runs again (a second start at its gate) and its dependents wait for it again.
    await waitFor(() => gate.starts === 2, { what: "the root's second run to reach its gate" });
    await page.waitForSelector(`${node(ids.root)}[data-status="running"]`);
    for (const ref of ['mid', 'leaf']) await page.waitForSelector(`${node(ids[ref])}[data-status="blocked"]`);
    gate.open();
    for (const ref of ['root', 'mid', 'leaf']) await page.waitForSelector(`${node(ids[ref])}[data-status="succeeded"]`);
    await page.waitForSelector(`${tid('flow-status')}:has-text("succeeded")`);
    expect(gate.starts).toBe(2);
    expect(problems).toEqual([]);
    await close();
  });
});
