// What the board's browser tests share: a Node-side API client for a server of the stack, and a
// tab of the board with waits on what the screen shows (data-testid, data-status, data-percent).
// Screenshots go to test-artifacts/ (ignored by git).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { callApi, sharedBoardStack, startBoardStack, watchPage, type BoardStack, type OwnBoardStack } from './board.ts';
import { GATED_TASKS_DIR, Gates } from './gates.ts';
import { waitFor } from './wait.ts';
import { SseParser } from '../../web/src/lib/live/sse-parser.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARTIFACTS = path.join(ROOT, 'test-artifacts');

/**
 * A board stack whose worker runs the gated tasks, and this file's gates: started before the
 * file's tests (then handed to `ready`), stopped after them. `shared`: the run's shared stack
 * (sharedBoardStack); `own`: a stack of the file's own (20 slots, one server).
 */
export function useGatedBoard<K extends 'shared' | 'own'>(kind: K, ready: (stack: K extends 'own' ? OwnBoardStack : BoardStack, gates: Gates) => void): void {
  let stack: BoardStack | undefined;
  let gates: Gates | undefined;
  beforeAll(async () => {
    gates = await Gates.start();
    stack = kind === 'own' ? await startBoardStack({ workerArgs: ['--concurrency', '20', '--tasks', GATED_TASKS_DIR] }) : await sharedBoardStack();
    ready(stack as K extends 'own' ? OwnBoardStack : BoardStack, gates);
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    await gates?.close();
  });
}

export interface Job {
  id: string;
  queue: string;
  kind: string;
  status: string;
  attempt: number;
  progress: { percent: number; message: string | null } | null;
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers (Node side)

/** Calls to the server whose URL `base` gives at the time of the call (a test may restart it). */
export function boardApi(base: () => string) {
  const call = <T>(method: string, route: string, body?: unknown) => callApi<T>(base(), method, route, body);
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
  return { call, enqueue, getJob, getEvents, waitForJob };
}

// ---------------------------------------------------------------------------------------------
// Browser helpers

export const tid = (id: string) => `[data-testid="${id}"]`;

export interface Tab {
  context: BrowserContext;
  page: Page;
  /** Uncaught exceptions and console warnings or errors in the page: every test expects none. */
  errors: string[];
  dialogs: string[];
  /** Full page loads; "without a reload" means this stays at 1. */
  loads: number;
  close(): Promise<void>;
}

/** Opens a page of the board at `url`/`hash` in the browser `browser()` gives: in a context of its own unless one is given. */
export function tabOpener(browser: () => Browser) {
  return async function openTab(url: string, hash = '#/', context?: BrowserContext, beforeLoad?: (page: Page) => Promise<void>): Promise<Tab> {
    const ctx = context ?? (await browser().newContext({ viewport: { width: 1280, height: 800 } }));
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
    await beforeLoad?.(page);
    await page.goto(`${url}/${hash}`);
    return tab;
  };
}

export const streamState = (page: Page, state: 'connecting' | 'live' | 'reconnecting', timeout = 20_000) =>
  page.waitForSelector(`${tid('stream-state')}:text-is("${state}")`, { timeout });

export const jobStatus = (page: Page, status: string, timeout = 30_000) =>
  page.waitForSelector(`${tid('job-status')}:text-is("${status}")`, { timeout });

export const rowStatus = (page: Page, id: string, status: string, timeout = 30_000) =>
  page.waitForSelector(`${tid(`job-row-${id}`)}[data-status="${status}"]`, { timeout });

/** Waits until the job page's progress bar shows a percent strictly between `above` and `below`; returns it. */
export async function percentWhere(page: Page, above: number, below: number, timeout = 20_000): Promise<number> {
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

export async function timelineIds(page: Page): Promise<string[]> {
  return page.$$eval(tid('timeline-event'), (els) => els.map((e) => e.getAttribute('data-event-id') ?? ''));
}

export async function shot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? false });
  return file;
}

export function expectCleanTab(tab: Tab) {
  expect(tab.errors, 'uncaught exceptions and console warnings in the page').toEqual([]);
  expect(tab.dialogs, 'dialogs opened by the page').toEqual([]);
}

/**
 * The event ids this page's stream (GET /api/events) has received, from Chromium's own network
 * log: the bytes of each stream response as they arrive (Network.streamResourceContent), or an
 * EventSource's messages. Start it before the page loads (openTab's `beforeLoad`): a response
 * already under way when the log starts is not followed.
 */
export async function streamLog(page: Page): Promise<{ ids: Set<string>; stop(): Promise<void> }> {
  const ids = new Set<string>();
  const note = (data: string) => {
    try {
      const e = JSON.parse(data) as { eventId?: string | number; id?: string | number };
      ids.add(String(e.eventId ?? e.id));
    } catch {
      // not an event (a piece out of order would show as an id missing, which the caller waits for)
    }
  };
  const cdp = await page.context().newCDPSession(page);
  const streams = new Map<string, SseParser>();
  const take = (requestId: string, base64: string | undefined) => {
    const parser = streams.get(requestId);
    if (parser && base64) for (const m of parser.push(Buffer.from(base64, 'base64').toString('utf8'))) note(m.data);
  };
  cdp.on('Network.responseReceived', ({ requestId, type, response }) => {
    if (type !== 'Fetch' || new URL(response.url).pathname !== '/api/events' || !response.mimeType.startsWith('text/event-stream')) return;
    streams.set(requestId, new SseParser());
    cdp.send('Network.streamResourceContent', { requestId }).then(
      ({ bufferedData }) => take(requestId, bufferedData),
      () => streams.delete(requestId), // it ended before it could be followed
    );
  });
  cdp.on('Network.dataReceived', ({ requestId, data }) => take(requestId, data));
  cdp.on('Network.eventSourceMessageReceived', ({ data }) => note(data));
  await cdp.send('Network.enable');
  return { ids, stop: () => cdp.detach() };
}

/**
 * Requests whose URL `match`es are answered by the server at once, but the page gets each answer
 * only after release() (later ones at once): a reply older than what the stream has brought by
 * then. `read` settles once the first answer is in.
 */
export async function holdReplies(page: Page, match: (url: URL) => boolean): Promise<{ read: Promise<void>; release(): void }> {
  let answered!: () => void;
  const read = new Promise<void>((r) => (answered = r));
  let open!: () => void;
  const released = new Promise<void>((r) => (open = r));
  await page.route(match, async (route) => {
    try {
      const response = await route.fetch();
      answered();
      await released;
      await route.fulfill({ response });
    } catch (err) {
      // A read the page gave up on (the tab closed, or it moved on) has no one left to answer:
      // Playwright then disposes the fetched reply. A read the test waits for would show as that
      // wait failing, so only a closed page or a disposed reply is let go here.
      if (!page.isClosed() && !/disposed|closed/i.test((err as Error).message)) throw err;
    }
  });
  return { read, release: open };
}

