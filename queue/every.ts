// A periodic task for housekeeping loops (worker maintenance, the server's history rollup).

const jitter = (ms: number) => ms * (0.75 + 0.5 * Math.random());

/** Runs `fn` every ~`everyMs` (jittered), never overlapping itself. */
export class Every {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;

  constructor(private readonly everyMs: number, private readonly fn: () => Promise<void>, firstInMs = jitter(everyMs)) {
    this.timer = setTimeout(() => this.tick(), firstInMs);
  }

  private tick(): void {
    this.running = this.fn().finally(() => {
      this.running = undefined;
      if (!this.stopped) this.timer = setTimeout(() => this.tick(), jitter(this.everyMs));
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
