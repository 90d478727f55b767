// What a `herald` process started, and how it stops: on a signal, a failed start or an uncaught
// error, the parts are stopped in reverse order of starting (worker drains, server closes, the
// embedded PostgreSQL stops last).
import type { Logger } from '../queue/log.ts';

/**
 * A terminal's Ctrl-C reaches the whole foreground process group, and a process manager's
 * `kill -TERM -PGID` does too; npm/npx then forward the same signal to us a moment later. Signals
 * that come this soon after the first are that one signal seen twice and must not cut the drain
 * short. Only one that comes later is a person asking to exit now.
 */
export const FORCE_EXIT_AFTER_MS = 2000;

/** What a signal does, given when the first one came (undefined: this is the first). */
export function onSignalAt(firstAt: number | undefined, now: number): 'drain' | 'ignore' | 'exit' {
  if (firstAt === undefined) return 'drain';
  return now - firstAt < FORCE_EXIT_AFTER_MS ? 'ignore' : 'exit';
}

/** What a command needs of its process's life: to register what it starts, and to stop it all when done. */
export type Life = Pick<ProcessLife, 'started' | 'stop'>;

const EXIT_CODE: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

export class ProcessLife {
  private readonly parts: { name: string; stop: () => Promise<void> }[] = [];
  private stopping: Promise<void> | undefined;
  private firstSignalAt: number | undefined;

  constructor(private readonly log: Logger) {
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
    process.on('uncaughtException', (err) => void this.fail(err));
    process.on('unhandledRejection', (err) => void this.fail(err));
  }

  /** Registers something started, to be stopped before everything started earlier. */
  started(name: string, stop: () => Promise<void>): void {
    this.parts.push({ name, stop });
  }

  /** Stops every part, newest first; later calls share the first one's run. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      let failed: Error | undefined;
      for (const part of this.parts.splice(0).reverse()) {
        try {
          await part.stop();
        } catch (err) {
          // Keep going: the database must still stop when the server fails to close.
          this.log.error({ err, part: part.name }, 'stop failed');
          failed ??= err as Error;
        }
      }
      if (failed) throw failed;
    })();
    return this.stopping;
  }

  /** A command that could not start (or failed): say why in one line, stop what it started, exit 1. */
  async fail(err: unknown): Promise<never> {
    // One line a person can act on; the stack only at debug level.
    process.stderr.write(`herald: ${err instanceof Error ? err.message : String(err)}\n`);
    if (process.env.HERALD_LOG_LEVEL === 'debug' && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    // An error while already stopping does not wait for that stop; the embedded cluster still
    // gets its shutdown from the exit hook in queue/embedded.ts.
    if (!this.stopping) await this.stop().catch(() => {});
    process.exit(1);
  }

  private readonly onSignal = (signal: NodeJS.Signals) => {
    const now = Date.now();
    const action = onSignalAt(this.firstSignalAt, now);
    if (action === 'ignore') {
      this.log.debug({ signal }, 'same signal again (process group and wrapper): still shutting down');
      return;
    }
    if (action === 'exit') {
      this.log.warn({ signal }, 'second signal: exiting now');
      process.exit(EXIT_CODE[signal] ?? 1);
    }
    this.firstSignalAt = now;
    this.log.info({ signal }, 'shutting down');
    this.stop().then(
      () => process.exit(0),
      (err) => {
        this.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
}
