// The finished steps of a worker's concurrent runs, written together through a Batcher with no
// delay: a step that finishes while a write is in flight goes with the others in the next one (one
// statement, one commit for all), and a step of an idle writer is written at once. Each step
// learns whether its own lease still held; a failed write fails its steps, as their own write
// would have, rather than being retried.
import type { Logger } from '../queue/log.ts';
import type { DurableService, StepWrite } from '../queue/services/durable.ts';
import { Batcher } from './batcher.ts';

/** Steps in one statement at most (a worker's slots rarely finish more at once). */
const MAX_BATCH = 200;

interface Pending {
  step: StepWrite;
  done(held: boolean): void;
  fail(err: unknown): void;
}

export class StepWriter {
  private readonly batcher: Batcher<Pending>;

  constructor(private readonly service: DurableService, private readonly worker: string, logger: Logger) {
    this.batcher = new Batcher({ name: 'steps', maxSize: MAX_BATCH, delayMs: 0, logger, flush: (batch) => this.write(batch) });
  }

  save(step: StepWrite): Promise<boolean> {
    return new Promise((done, fail) => this.batcher.add({ step, done, fail }));
  }

  private async write(batch: Pending[]): Promise<void> {
    try {
      const held = await this.service.saveSteps(this.worker, batch.map((p) => p.step));
      batch.forEach((p, i) => p.done(held[i]));
    } catch (err) {
      for (const p of batch) p.fail(err);
    }
  }
}
