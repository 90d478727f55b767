// The finished steps of a worker's concurrent runs, written together: a step that finishes while
// a write is in flight waits for it and goes with the others in the next one (one statement, one
// commit for all). An idle writer writes at once, so a run alone waits no longer than for its own
// statement. Each step learns whether its own lease still held.
import type { DurableService, StepWrite } from '../queue/services/durable.ts';

/** Steps in one statement at most (a worker's slots rarely finish more at once). */
const MAX_BATCH = 200;

interface Pending {
  step: StepWrite;
  done(held: boolean): void;
  fail(err: unknown): void;
}

export class StepWriter {
  private pending: Pending[] = [];
  private writing = false;

  constructor(private readonly service: DurableService, private readonly worker: string) {}

  save(step: StepWrite): Promise<boolean> {
    return new Promise((done, fail) => {
      this.pending.push({ step, done, fail });
      if (!this.writing) void this.write();
    });
  }

  private async write(): Promise<void> {
    this.writing = true;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_BATCH);
      try {
        const held = await this.service.saveSteps(this.worker, batch.map((p) => p.step));
        batch.forEach((p, i) => p.done(held[i]));
      } catch (err) {
        // Each run's step throws, as its own write would have.
        for (const p of batch) p.fail(err);
      }
    }
    this.writing = false;
  }
}
