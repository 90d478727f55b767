// `herald`: the process around bin/program.ts. It reads the environment, makes the logger and the
// ProcessLife that stops what a command started, and turns a failure into one line and exit 1.
import { loadConfig } from '../queue/config.ts';
import { createLogger } from '../queue/log.ts';
import { ProcessLife } from './process-life.ts';
import { heraldProgram } from './program.ts';

async function main() {
  const config = loadConfig();
  const log = createLogger(config.logLevel, { stderr: process.argv[2] === 'enqueue', format: config.logFormat });
  const life = new ProcessLife(log);
  started = life;
  await heraldProgram(config, log, life).parseAsync(process.argv);
}

// Set once the logger exists; until then nothing has been started that would need stopping.
let started: ProcessLife | undefined;

main().catch((err) => {
  if (started) return started.fail(err);
  process.stderr.write(`herald: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
