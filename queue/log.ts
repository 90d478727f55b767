import { isatty } from 'node:tty';
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { DEFAULTS } from './defaults.ts';

export type { Logger };

/** HERALD_LOG_FORMAT: a person at a terminal reads pretty lines; log collectors get JSON. */
export const LOG_FORMATS = ['auto', 'pretty', 'json'] as const;
export type LogFormatSetting = (typeof LOG_FORMATS)[number];

/** What the logger writes: the setting, or for 'auto', pretty exactly when the stream is a terminal. */
export function chooseLogFormat(setting: LogFormatSetting, isTerminal: boolean): 'pretty' | 'json' {
  if (setting === 'auto') return isTerminal ? 'pretty' : 'json';
  return setting;
}

/** The process logger; HERALD_LOG_LEVEL=debug shows every poll, claim, renewal and completion. */
export function createLogger(
  level = process.env.HERALD_LOG_LEVEL || DEFAULTS.logLevel,
  opts: { stderr?: boolean; format?: LogFormatSetting } = {},
): Logger {
  // Commands that print results on stdout (enqueue) log to stderr instead.
  const fd = opts.stderr ? 2 : 1;
  const terminal = isatty(fd);
  if (chooseLogFormat(opts.format ?? DEFAULTS.logFormat, terminal) === 'json') {
    return pino({ name: 'herald', level }, pino.destination(fd));
  }
  // In-process and synchronous (no transport thread), so nothing is lost at process.exit.
  const stream = pretty({ destination: fd, sync: true, colorize: terminal, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' });
  return pino({ name: 'herald', level }, stream);
}
