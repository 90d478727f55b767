// What the board tests in Chromium share: a fresh build of the board, Chromium itself, and the
// stack they drive (servers and a worker as real processes on the file's own database).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { startServer } from '../system/support.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { spawnHerald, type HeraldProcess } from './herald-process.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM = process.env.HERALD_CHROMIUM ?? '/usr/bin/chromium';

/** Newest modification time of the board's sources (web/src, index.html, the Vite config). */
function newestSource(dir = path.join(ROOT, 'web')): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'dist' || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * The server serves web/dist. Build it when it is missing (as `herald start` does), and also when
 * it is older than its sources: a stale build would test yesterday's board.
 */
async function ensureFreshBoard(): Promise<void> {
  const index = path.join(ROOT, 'web', 'dist', 'index.html');
  if (fs.existsSync(index) && fs.statSync(index).mtimeMs >= newestSource()) return;
  const { build } = await import('vite');
  await build({ configFile: path.join(ROOT, 'web', 'vite.config.ts'), logLevel: 'warn' });
}

/** Headless Debian Chromium (no browser download). */
function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

type ServerProcess = { proc: HeraldProcess; url: string };

export interface BoardStack {
  db: TestDatabase;
  /** One `herald server` per entry of `serverEnvs`, in that order. */
  servers: ServerProcess[];
  worker: HeraldProcess;
  /** The worker's identity, as its "worker started" line gives it. */
  workerId: string;
  browser: Browser;
  stop(): Promise<void>;
}

/**
 * A fresh board build, this file's database, its servers and one worker started side by side,
 * and Chromium. Each server gets DATABASE_URL and the info log level under its own env.
 */
export async function startBoardStack(opts: { workerArgs: string[]; serverEnvs?: Record<string, string>[] }): Promise<BoardStack> {
  await ensureFreshBoard();
  const db = await createTestDatabase();
  const env = { DATABASE_URL: db.url, HERALD_LOG_LEVEL: 'info' };
  const [servers, [worker, workerId], browser] = await Promise.all([
    Promise.all((opts.serverEnvs ?? [{}]).map((extra) => startServer({ ...env, ...extra }))),
    (async (): Promise<[HeraldProcess, string]> => {
      const w = spawnHerald(['worker', ...opts.workerArgs], env);
      return [w, String((await w.waitForMessage(/^worker started$/, 60_000)).worker)];
    })(),
    launchChromium(),
  ]);
  return {
    db, servers, worker, workerId, browser,
    async stop() {
      await browser.close();
      await Promise.all([...servers.map((s) => s.proc.dispose()), worker.dispose()]);
      await db.drop();
    },
  };
}
