// A pino logger whose lines a test can wait for: the way to know that something inside a worker
// or server happened (a wake-up barrier given up on, say) without sleeping for it.
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

export interface LogWatch {
  logger: Logger;
  /** Resolves with the first line (parsed) whose msg contains `text` (and that `match` accepts), from now or earlier. */
  line(text: string, match?: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Every line so far. */
  lines(): Record<string, unknown>[];
}

export function watchLog(level: pino.Level = 'debug'): LogWatch {
  const lines: Record<string, unknown>[] = [];
  const waiters: { fits: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      const l = JSON.parse(chunk.toString()) as Record<string, unknown>;
      lines.push(l);
      for (const w of waiters.splice(0)) {
        if (w.fits(l)) w.resolve(l);
        else waiters.push(w);
      }
      done();
    },
  });
  return {
    logger: pino({ level }, sink),
    lines: () => [...lines],
    line(text, match = () => true) {
      const fits = (l: Record<string, unknown>) => String(l.msg).includes(text) && match(l);
      const seen = lines.find(fits);
      return seen ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ fits, resolve }));
    },
  };
}
