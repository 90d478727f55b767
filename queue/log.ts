import { pino, type Logger } from 'pino';

export type { Logger };

/** The process logger; HERALD_LOG_LEVEL=debug shows every poll, claim, renewal and completion. */
export function createLogger(level = process.env.HERALD_LOG_LEVEL || 'info', name = 'herald'): Logger {
  return pino({ name, level });
}
