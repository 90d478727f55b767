// A board stack of a file's own that fails to start leaves nothing behind: the processes it had
// already spawned are killed, and the failure is thrown.
import fs from 'node:fs';
import { expect, it } from 'vitest';
import { startBoardStack } from './support/board.ts';

/** This process's living children that run bin/herald.js, read from /proc. */
function heraldChildren(): string[] {
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      // The parent's pid is the 4th field of stat, after the command name in parentheses.
      const ppid = Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]);
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      if (ppid === process.pid && cmd.includes('bin/herald.js')) found.push(`${pid}: ${cmd}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

// Mutation caught: startProcesses without its `await stop()` on failure (the server, still
// starting or already listening, outlives the stack).
it('kills the server it started when the worker fails to start, then throws', async () => {
  await expect(startBoardStack({ workerArgs: ['--concurrency', 'none'] })).rejects.toThrow(/exited \(1\) before the awaited log line/);
  expect(heraldChildren()).toEqual([]);
});
