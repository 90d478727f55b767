// The worker's row in herald.workers: registered at start (and after every listener reconnect,
// since the liveness key may change), refreshed every WORKER_HEARTBEAT_MS, deleted on a clean
// stop. A worker that dies leaves the list at once through its vanished liveness lock, or
// within WORKER_STALE_MS through last_seen_at; the maintenance pass deletes such rows.
import os from 'node:os';
import type { RegistryService, WorkerRegistration } from '../queue/services/registry.ts';
import type { Logger } from '../queue/log.ts';
import { WORKER_HEARTBEAT_MS } from '../queue/defaults.ts';

export interface RegistryOptions {
  registry: RegistryService;
  logger: Logger;
  id: string;
  queues: string[] | null;
  kinds: string[];
  capabilities: string[];
  concurrency: number;
  /** The liveness key held right now (it changes when the listener reconnects). */
  lockKey(): number | null;
  /** How often the row is refreshed (WORKER_HEARTBEAT_MS). */
  heartbeatMs?: number;
}

export class Registry {
  private timer?: NodeJS.Timeout;
  private inFlight?: Promise<void>;
  /** A refresh was asked for while one was in flight. */
  private again = false;
  private stopped = false;
  private registered = false;

  constructor(private readonly opts: RegistryOptions) {}

  private registration(): WorkerRegistration {
    const { id, queues, kinds, capabilities, concurrency } = this.opts;
    return { id, host: os.hostname(), pid: process.pid, queues, kinds, capabilities, concurrency, lockKey: this.opts.lockKey() };
  }

  async start(): Promise<void> {
    await this.opts.registry.registerWorker(this.registration());
    this.registered = true;
    this.schedule();
  }

  /**
   * After a listener reconnect: record the new liveness key now. One asked for while a refresh is
   * in flight runs right after it: that one may have read the old key.
   */
  refresh(): void {
    // The listener's first connect comes before start() writes the row, which records the key itself.
    if (!this.registered || this.stopped) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.inFlight = this.touch().finally(() => {
      this.inFlight = undefined;
      if (this.again) {
        this.again = false;
        this.refresh();
      } else this.schedule();
    });
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => this.refresh(), this.opts.heartbeatMs ?? WORKER_HEARTBEAT_MS);
  }

  private async touch(): Promise<void> {
    try {
      const found = await this.opts.registry.touchWorker(this.opts.id, this.opts.lockKey());
      if (!found) {
        this.opts.logger.warn('registry row was gone (taken for dead while cut off?): registering again');
        await this.opts.registry.registerWorker(this.registration());
      }
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'worker registry refresh failed');
    }
  }

  /** Stops refreshing and removes the row, so the worker leaves the list at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
    await this.opts.registry.unregisterWorker(this.opts.id).catch((err) => {
      this.opts.logger.warn({ err: (err as Error).message }, 'could not remove the registry row; it goes when the liveness lock does');
    });
  }
}
