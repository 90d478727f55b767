// `herald worker --watch`, for development: the worker runs as a child process that is replaced
// whenever a file under its task directory changes. A task file is an ES module, and Node never
// loads a module twice in one process (nor what it imports), so a fresh process is the only
// reload that picks up every edit. The old child stops as on SIGTERM (running jobs finish within
// the shutdown grace, or go back to the queue), then the new one starts.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { Life } from './process-life.ts';

const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), 'herald.js');
/** Edits come in bursts (an editor writes a file, then renames it): one restart per burst. */
const SETTLE_MS = 200;

export function watchWorker(args: string[], tasksDir: string, log: Logger, life: Life): void {
  let child: ChildProcess | null = null;
  let stopping = false;
  let restarting = false;
  let timer: NodeJS.Timeout | undefined;

  const start = () => {
    // An IPC channel, so the child stops when this process ends, however it ends (kill -9 too).
    const c = spawn(process.execPath, [BIN, 'worker', ...args], { stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
    child = c;
    c.once('exit', (code, signal) => {
      if (child === c) child = null;
      // Exited on its own (a task file that does not load, say): wait for the next edit.
      if (!stopping && !restarting) log.warn({ code, signal }, 'the worker exited; it starts again when a task file changes');
    });
  };
  const stopChild = () =>
    new Promise<void>((resolve) => {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return resolve();
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    });
  const restart = async (file: string | null) => {
    restarting = true;
    log.info({ file }, 'a task file changed: restarting the worker');
    await stopChild();
    restarting = false;
    if (!stopping) start();
  };

  const watcher = fs.watch(tasksDir, { recursive: true }, (_event, file) => {
    clearTimeout(timer);
    timer = setTimeout(() => void restart(file ? path.join(tasksDir, file.toString()) : null), SETTLE_MS);
  });
  life.started('worker', async () => {
    stopping = true;
    clearTimeout(timer);
    watcher.close();
    await stopChild();
  });
  log.info({ tasks: tasksDir }, 'watching the task files: the worker restarts when one changes');
  start();
}
