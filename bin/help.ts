// What `herald --help` says after the commands: the environment each command reads, with its
// default, from the one table of it (queue/config.ts), since most settings have no flag of their own.
import { ENVIRONMENT } from '../queue/config.ts';

export function environmentHelp(): string {
  const width = Math.max(...ENVIRONMENT.map(([n]) => n.length));
  const rows = ENVIRONMENT.map(([name, fallback, meaning]) => `  ${name.padEnd(width)}  ${meaning} (default: ${fallback})`);
  return ['', 'Environment (flags override it):', ...rows, '', 'Quick start: npm start, then open the board; see README.md.'].join('\n');
}
