// The board: built on demand by `herald start` (Vite, web/vite.config.ts), served at `/` with a
// CSP it works under; without a build, `/` says how to make one.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { buildBoard, ensureBoardBuilt } from '../server/board.ts';
import { testLogger, testServer } from './server-support.ts';

const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-board-'));
afterAll(() => fs.rmSync(outDir, { recursive: true, force: true }));

describe('board', () => {
  it('answers / with how to build it when there is no build', async () => {
    const s = await testServer({ boardDir: path.join(outDir, 'missing') });
    const res = await s.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.body).toContain('npm run build');
    await s.close();
  });

  it('builds the board when it is missing, and serves it at / with its assets', async () => {
    fs.rmSync(outDir, { recursive: true, force: true });
    const lines: string[] = [];
    // The build says nothing of its own: a first start's output is Herald's lines, not Vite's
    // report or Rolldown's plugin timings (mutation caught: logLevel 'warn' → 'info' in buildBoard).
    const said: unknown[][] = [];
    const spies = (['log', 'info', 'warn', 'error'] as const).map((m) => vi.spyOn(console, m).mockImplementation((...args) => void said.push(args)));
    try {
      await ensureBoardBuilt(pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }), 'http://127.0.0.1:3000/', outDir);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(said).toEqual([]);
    expect(fs.existsSync(path.join(outDir, 'index.html'))).toBe(true);
    // The first line a first start prints says where the board will be, before the build's wait.
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual([expect.stringMatching(/^the board will be at http:\/\/127\.0\.0\.1:3000\/ in a moment/), 'board built']);
    const s = await testServer({ boardDir: outDir });
    const index = await s.app.inject({ method: 'GET', url: '/' });
    expect(index.statusCode).toBe(200);
    expect(index.headers['cache-control']).toBe('no-cache');
    expect(index.headers['content-security-policy']).toMatch(/script-src 'self';/);
    const assets = [...index.body.matchAll(/(?:src|href)="\.?\/?(assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThan(0);
    for (const a of assets) {
      const res = await s.app.inject({ method: 'GET', url: `/${a}` });
      expect(res.statusCode, a).toBe(200);
      expect(res.headers['cache-control']).toMatch(/immutable/);
    }
    // No inline scripts: the CSP (script-src 'self') would block them.
    expect(index.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>\s*\S/);
    expect((await s.app.inject({ method: 'GET', url: '/nope.js' })).statusCode).toBe(404);
    await s.close();
  }, 180_000);

  it('rebuilds beside the old build and swaps the new one in whole: the old one is complete until then, and nothing is left over', async () => {
    if (!fs.existsSync(path.join(outDir, 'index.html'))) await ensureBoardBuilt(testLogger(), 'http://127.0.0.1:3000/', outDir);
    const marker = path.join(outDir, 'from-the-old-build');
    fs.writeFileSync(marker, '');
    let checks = 0;
    let done = false;
    const building = buildBoard(outDir).finally(() => (done = true));
    // A server reading the directory meanwhile finds the old build, whole (the swap is two renames in one tick).
    while (!done) {
      expect(fs.existsSync(path.join(outDir, 'index.html'))).toBe(true);
      expect(fs.existsSync(marker)).toBe(true);
      checks++;
      await new Promise((r) => setTimeout(r, 20));
    }
    await building;
    expect(checks).toBeGreaterThan(1);
    expect(fs.existsSync(marker)).toBe(false);
    expect(fs.existsSync(path.join(outDir, 'index.html'))).toBe(true);
    const base = path.basename(outDir);
    expect(fs.readdirSync(path.dirname(outDir)).filter((n) => n.startsWith(`${base}.`))).toEqual([]);
  }, 180_000);
});
