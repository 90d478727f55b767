// What the board tests in Chromium share: a fresh build of the board, and Chromium itself.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

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
export async function ensureFreshBoard(): Promise<void> {
  const index = path.join(ROOT, 'web', 'dist', 'index.html');
  if (fs.existsSync(index) && fs.statSync(index).mtimeMs >= newestSource()) return;
  const { build } = await import('vite');
  await build({ configFile: path.join(ROOT, 'web', 'vite.config.ts'), logLevel: 'warn' });
}

/** Headless Debian Chromium (no browser download). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}
