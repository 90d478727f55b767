// A `herald` child process for cross-process tests: spawned with its own env, its pino lines
// parsed, and waitable by log line or exit. Either `node bin/herald.js …` directly, or a command
// as users type it (`npm start`, `npx herald worker`) in a process group of its own, the way a
// terminal or a process manager runs it, so the test can signal the whole group.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(REPO, 'bin', 'herald.js');

export interface LogLine {
  level?: number;
  msg?: string;
  [k: string]: unknown;
}

export class HeraldProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: { test: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];

  constructor(args: string[], env: Record<string, string | undefined>, private readonly group = false) {
    // An undefined value unsets a variable the test process has (DATABASE_URL, say).
    const merged: NodeJS.ProcessEnv = { ...process.env, HERALD_LOG_LEVEL: 'info' };
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined) delete merged[k];
      else merged[k] = v;
    }
    this.child = group
      ? spawn(args[0], args.slice(1), { env: merged, cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
      : spawn(process.execPath, [BIN, ...args], { env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      readline.createInterface({ input: stream }).on('line', (text) => this.onLine(text));
    }
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  private onLine(text: string): void {
    let line: LogLine;
    try {
      line = JSON.parse(text);
    } catch {
      line = { msg: text };
    }
    this.lines.push(line);
    this.waiters = this.waiters.filter((w) => {
      if (!w.test(line)) return true;
      w.resolve(line);
      return false;
    });
  }

  /** Resolves with the first log line (past or future) that passes `test`. */
  waitFor(test: (l: LogLine) => boolean, timeoutMs = 90_000): Promise<LogLine> {
    const seen = this.lines.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for a log line; last lines:\n${this.tail()}`)), timeoutMs);
      this.waiters.push({ test, resolve: (l) => { clearTimeout(timer); resolve(l); } });
      void this.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`process exited (${code ?? signal}) before the awaited log line:\n${this.tail()}`));
      });
    });
  }

  waitForMessage(pattern: RegExp, timeoutMs?: number): Promise<LogLine> {
    return this.waitFor((l) => typeof l.msg === 'string' && pattern.test(l.msg), timeoutMs);
  }

  tail(n = 15): string {
    return this.lines.slice(-n).map((l) => JSON.stringify(l)).join('\n');
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  /** Signals the whole process group, as a terminal's Ctrl-C or `kill -TERM -PGID` does. */
  killGroup(signal: NodeJS.Signals): void {
    process.kill(-this.child.pid!, signal);
  }

  /** SIGKILL if still running (the whole group, for a command); for afterAll cleanup. */
  async dispose(): Promise<void> {
    if (this.group) {
      try {
        process.kill(-this.child.pid!, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
    this.kill('SIGKILL');
    await this.exited;
  }
}

export const spawnHerald = (args: string[], env: Record<string, string | undefined>) => new HeraldProcess(args, env);

/** A command as a user types it in the repository (`npm start`), leading a process group of its own. */
export const spawnCommand = (command: string[], env: Record<string, string | undefined>) => new HeraldProcess(command, env, true);

/** Whether a process lives (signal 0 only checks). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
