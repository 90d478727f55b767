// A page in Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe), with
// only the Runtime and Page domains in use. Playwright enables the Network domain on every page,
// and with it the renderer keeps a copy of each response's body for the inspector: for the board's
// endless event stream, main-thread work that no person's browser does. The board bench measures
// through this driver so that what it counts is the board's own work (`@playwright` measures the
// other way, to compare).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { CHROMIUM_OPTIONS } from '../test/support/board-processes.ts';

interface Reply { id?: number; result?: unknown; error?: { message: string }; sessionId?: string }

export class PipePage {
  private next = 1;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  /** The page's session, whose replies come through the browser's reader. */
  private route?: PipePage;

  private constructor(private readonly chromium: ChildProcess, private readonly profile: string, private readonly sessionId = '') {}

  /**
   * Starts a headless Chromium, opens a page with `initScript` run before its own scripts, and
   * loads `url`; with a `cpuSlowdown` over 1, under DevTools' CPU throttling from the start.
   */
  static async open(url: string, viewport: { width: number; height: number }, initScript: string, cpuSlowdown = 1): Promise<PipePage> {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-board-pipe-'));
    const chromium = spawn(CHROMIUM_OPTIONS.executablePath!, [
      ...(CHROMIUM_OPTIONS.args ?? []), '--headless', '--remote-debugging-pipe', `--user-data-dir=${profile}`,
      `--window-size=${viewport.width},${viewport.height}`, 'about:blank',
    ], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
    const browser = new PipePage(chromium, profile);
    browser.listen(chromium.stdio[4] as Readable);
    const targets = await browser.send<{ targetInfos: { targetId: string; type: string }[] }>('Target.getTargets');
    const target = targets.targetInfos.find((t) => t.type === 'page');
    if (!target) throw new Error('Chromium opened no page');
    const { sessionId } = await browser.send<{ sessionId: string }>('Target.attachToTarget', { targetId: target.targetId, flatten: true });
    const page = new PipePage(chromium, profile, sessionId);
    // One pipe carries every session's replies: the page shares the browser's reader.
    browser.route = page;
    await page.send('Page.enable');
    await page.send('Page.addScriptToEvaluateOnNewDocument', { source: initScript });
    if (cpuSlowdown > 1) await page.send('Emulation.setCPUThrottlingRate', { rate: cpuSlowdown });
    await page.send('Page.navigate', { url });
    return page;
  }

  private listen(out: Readable): void {
    let buffered = '';
    out.setEncoding('utf8');
    out.on('data', (chunk: string) => {
      buffered += chunk;
      let end: number;
      while ((end = buffered.indexOf('\0')) >= 0) {
        const reply = JSON.parse(buffered.slice(0, end)) as Reply;
        buffered = buffered.slice(end + 1);
        const owner = reply.sessionId && this.route ? this.route : this;
        owner.settle(reply);
      }
    });
  }

  private settle(reply: Reply): void {
    const call = reply.id === undefined ? undefined : this.waiting.get(reply.id);
    if (!call) return;
    this.waiting.delete(reply.id!);
    if (reply.error) call.reject(new Error(reply.error.message));
    else call.resolve(reply.result);
  }

  /** One DevTools protocol call, on the page's session. */
  private send<T>(method: string, params: object = {}): Promise<T> {
    const id = this.next++;
    const message = { id, method, params, ...(this.sessionId ? { sessionId: this.sessionId } : {}) };
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      (this.chromium.stdio[3] as Writable).write(`${JSON.stringify(message)}\0`);
    });
  }

  /** The value of `expression` in the page (awaited when it is a promise). */
  async evaluate<T>(expression: string): Promise<T> {
    const r = await this.send<{ result: { value: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }>(
      'Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
    return r.result.value;
  }

  async close(): Promise<void> {
    const exited = new Promise((r) => this.chromium.once('exit', r));
    // Browser.close is a call to the browser, not the page: sent without the page's session.
    (this.chromium.stdio[3] as Writable).write(`${JSON.stringify({ id: this.next++, method: 'Browser.close' })}\0`);
    await exited;
    // Chromium's helper processes may still be letting go of the profile.
    fs.rmSync(this.profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}
