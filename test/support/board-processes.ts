// The processes behind the board's browser tests, outside any test file (board-global-setup.ts
// starts the run's shared ones with these too): a fresh build of the board, Chromium's options,
// and a stack of `herald server`s and one worker on a database.
import fs from 'node:fs';
import path from 'node:path';
import type { LaunchOptions } from 'playwright-core';
import { buildBoard } from '../../server/board.ts';
import { serverListening } from '../system/support.ts';
import { alive, spawnHerald, type HeraldProcess } from './herald-process.ts';
import { ROOT } from './projects.ts';

/** Headless Debian Chromium (no browser download). */
export const CHROMIUM_OPTIONS: LaunchOptions = {
  executablePath: process.env.HERALD_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
};

/** HERALD_TOKENS of the shared stack's second server. */
export const SHARED_TOKENS = 'viewer:viewer-secret-0001,admin:admin-secret-00001';

/** Newest modification time of the board's sources (web/src, index.html, the Vite config). */
function newestSource(dir = path.join(ROOT, 'web')): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'dist' || entry.name.startsWith('dist.') || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** Runs `fn` holding a lock directory shared by the test processes; one left by a dead process is broken. */
async function withLockDir<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      fs.mkdirSync(dir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner = 0;
    try {
      owner = Number(fs.readFileSync(path.join(dir, 'pid'), 'utf8'));
    } catch {
      // Just made, its pid not yet written: wait.
    }
    if (owner && !alive(owner)) fs.rmSync(dir, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 200));
  }
  fs.writeFileSync(path.join(dir, 'pid'), String(process.pid));
  try {
    return await fn();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The server serves web/dist. Build it when it is missing (as `herald start` does), and also when
 * it is older than its sources: a stale build would test yesterday's board.
 * Runs side by side (two checkouts' suites, say) wait on a lock: one builds, the others then find
 * the build fresh (and buildBoard swaps a build in whole, so no server ever serves half of one).
 */
export async function ensureFreshBoard(): Promise<void> {
  const dist = path.join(ROOT, 'web', 'dist');
  const index = path.join(dist, 'index.html');
  const fresh = () => fs.existsSync(index) && fs.statSync(index).mtimeMs >= newestSource();
  if (fresh()) return;
  await withLockDir(path.join(ROOT, 'web', '.dist-lock'), async () => {
    if (!fresh()) await buildBoard(dist);
  });
}

export type ServerProcess = { proc: HeraldProcess; url: string };

export interface StackProcesses {
  /** One `herald server` per entry of `serverEnvs`, in that order. */
  servers: ServerProcess[];
  worker: HeraldProcess;
  /** The worker's identity, as its "worker started" line gives it. */
  workerId: string;
  stop(): Promise<void>;
}

/**
 * Servers (one per entry of `serverEnvs`, each with DATABASE_URL and the info log level under its
 * own env) and one worker, started side by side. When one fails to start, the others are killed
 * at once, started or not, and the failure is thrown: nothing outlives a stack that never was.
 */
export async function startProcesses(opts: { databaseUrl: string; workerArgs: string[]; serverEnvs?: Record<string, string>[] }): Promise<StackProcesses> {
  const env = { DATABASE_URL: opts.databaseUrl, HERALD_LOG_LEVEL: 'info' };
  const spawned: HeraldProcess[] = [];
  const spawn = (args: string[], extra: Record<string, string>) => {
    const proc = spawnHerald(args, { ...env, ...extra });
    spawned.push(proc);
    return proc;
  };
  let servers: ServerProcess[] = [];
  // What it spawned, and a server a test put in `servers` in place of one (board-live restarts one).
  const stop = async () => {
    await Promise.all([...new Set([...spawned, ...servers.map((s) => s.proc)])].map((p) => p.dispose()));
  };
  try {
    const worker = spawn(['worker', ...opts.workerArgs], {});
    let started;
    [servers, started] = await Promise.all([
      Promise.all((opts.serverEnvs ?? [{}]).map((extra) => serverListening(spawn(['server'], { PORT: '0', ...extra })))),
      worker.waitForMessage(/^worker started$/, 90_000),
    ]);
    return { servers, worker, workerId: String(started.worker), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
