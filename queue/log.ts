import { pino, type Logger } from 'pino';
import { DEFAULTS } from './defaults.ts';

export type { Logger };

/** The process logger; HERALD_LOG_LEVEL=debug shows every poll, claim, renewal and completion. */
export function createLogger(level = process.env.HERALD_LOG_LEVEL || DEFAULTS.logLevel, opts: { stderr?: boolean } = {}): Logger {
  // Commands that print results on stdout (enqueue) log to stderr instead.
  return pino({ name: 'herald', level }, pino.destination(opts.stderr ? 2 : 1));
}
