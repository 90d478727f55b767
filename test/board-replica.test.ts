// The Health page's read replica card, in headless Chromium against a real `herald server` whose
// HERALD_READ_URL names a real streaming standby (test/support/standby.ts): it says the reads go
// to the replica while the standby keeps up, that they go to the primary once its replay is
// paused past HERALD_READ_MAX_LAG_MS, and the replica again once replay resumes. Every wait is
// for what the screen shows; nothing asserts a duration.
import pg from 'pg';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { openBoard, startBoardStack, type OwnBoardStack } from './support/board.ts';
import { startStandbyPair, type StandbyPair } from './support/standby.ts';

let pair: StandbyPair;
let stack: OwnBoardStack;
let browser: Browser;
let url: string;
const tid = (id: string) => `[data-testid="${id}"]`;

beforeAll(async () => {
  pair = await startStandbyPair();
  const pool = createPool(pair.primaryUrl);
  const db = { url: pair.primaryUrl, name: 'herald', pool, queue: new Queue(pool), drop: () => pool.end() };
  stack = await startBoardStack({ db, workerArgs: ['--concurrency', '2'], serverEnvs: [{ HERALD_READ_URL: pair.standbyUrl, HERALD_READ_MAX_LAG_MS: '2000' }] });
  ({ browser } = stack);
  url = stack.servers[0].url;
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  await pair?.stop();
});

it('shows the replica card: reads on the replica, on the primary while replay is paused past the lag limit, and back', async () => {
  const { page, problems, close } = await open();
  const card = tid('health-replica');
  try {
    await page.waitForSelector(`${card}.good:has-text("reads go to the replica")`);
    const standby = new pg.Client({ connectionString: pair.standbyUrl });
    await standby.connect();
    try {
      await standby.query('SELECT pg_wal_replay_pause()');
      // A write the paused standby cannot replay: its lag grows past the 2 s limit.
      await stack.db.queue.enqueue({ kind: 'noop', queue: 'replica-card' });
      // Mutation caught: the card's class test reading r.reading === 'replica' as bad.
      await page.waitForSelector(`${card}.bad:has-text("reads go to the primary until it is within 2")`, { timeout: 60_000 });
      await standby.query('SELECT pg_wal_replay_resume()');
    } finally {
      await standby.query('SELECT pg_wal_replay_resume()').catch(() => {});
      await standby.end();
    }
    await page.waitForSelector(`${card}.good:has-text("reads go to the replica")`, { timeout: 60_000 });
    expect(problems).toEqual([]);
  } finally {
    await close();
  }
});

const open = () => openBoard(browser, url, '#/health');
