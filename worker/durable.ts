// A durable run: ctx.step, sleep, sleepUntil, waitFor and invoke for one run of a job. The model is
// replay: a resumed handler runs again from its top, and each call that finished in an earlier run
// returns what it stored. A call is found by its type, its name and its occurrence (the n-th call
// of that name in this run), so code that adds or reorders steps still finds the ones it kept.
//
// The run reads every record of its job once, at its first durable call; a replayed call costs no
// round trip, a new step one statement. Sleeping or waiting ends the run: the job is queued again
// with its wake-up time (no slot, no lease, no attempt used) and the handler's promise is left
// pending for ever; the slot is freed at once (Slots.suspended).
import { MAX_STEPS, MAX_STEP_RESULT_BYTES } from '../queue/defaults.ts';
import type { Logger } from '../queue/log.ts';
import type { ChildEnd, DurableService, RecordRow, SignalValue, Suspension } from '../queue/services/durable.ts';
import type { EnqueueInput } from '../queue/services/insert.ts';
import { InvokedJobError, LeaseLostError } from './errors.ts';
import type { ActiveJob } from './active-job.ts';
import type { StepWriter } from './step-writer.ts';
import { inStep } from './tracing.ts';

/** What ctx.invoke takes besides kind and payload: an enqueue body's options. */
export type InvokeOptions = Omit<EnqueueInput, 'kind' | 'payload' | 'runAt' | 'idempotencyKey' | 'dependsOn' | 'onParentFailure'>;

export interface DurableDeps {
  service: DurableService;
  worker: string;
  /** Where a new step's result is written (with the steps other runs finish meanwhile). */
  steps: StepWriter;
  logger: Logger;
  /** The run ended to sleep or wait (or was cancelled there): free its slot. */
  suspended(a: ActiveJob): void;
  /** Its job is due again at this time (epoch ms): a sleep's end, a wait's timeout. */
  wakeAt?(epochMs: number): void;
}

const keyOf = (type: string, name: string, occurrence: number) => `${type}\u0000${name}\u0000${occurrence}`;

export class DurableRun {
  private records?: Map<string, unknown>;
  private signals?: Map<string, SignalValue>;
  private loading?: Promise<void>;
  private readonly counts = new Map<string, number>();
  /** Stored steps this run has met (the rest are named when it succeeds). */
  private readonly met = new Set<string>();
  private calls = 0;
  private replayed = 0;
  /** The step whose work threw, with what it threw: the attempt's error names it when it is that. */
  failed?: { error: unknown; step: string };

  constructor(private readonly a: ActiveJob, private readonly deps: DurableDeps) {}

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    if (typeof name !== 'string' || name.length === 0 || name.length > 256) throw new TypeError('ctx.step: the name must be a string of 1 to 256 characters');
    await this.ready();
    const occurrence = this.next('step', name);
    const key = keyOf('step', name, occurrence);
    if (this.records!.has(key)) {
      this.met.add(key);
      // No span a replayed step (a replay of 1,000 would be 1,000 spans): the run's span counts them.
      this.a.span?.setAttribute('herald.job.steps_replayed', ++this.replayed);
      return this.records!.get(key) as T;
    }
    return inStep(name, occurrence, async () => {
      const t0 = performance.now();
      let json: string;
      try {
        json = JSON.stringify((await fn()) ?? null);
        if (Buffer.byteLength(json) > MAX_STEP_RESULT_BYTES) {
          throw new RangeError(`step "${name}" returned ${Buffer.byteLength(json)} bytes of JSON; a step's result may be at most ${MAX_STEP_RESULT_BYTES} bytes`);
        }
      } catch (err) {
        // Kept with the attempt's error (last_error.step), so the board can say which step failed.
        this.failed = { error: err, step: name };
        throw err;
      }
      this.live();
      const { lease } = this.a;
      if (!(await this.deps.steps.save({ lease, name, occurrence, json, ms: performance.now() - t0 }))) {
        throw this.lost();
      }
      // What a replay will return, so that this run sees the same (a Date becomes its ISO string).
      const stored = JSON.parse(json) as T;
      this.records!.set(key, stored);
      this.met.add(key);
      return stored;
    });
  }

  sleep(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) throw new TypeError('ctx.sleep: ms must be a finite number >= 0');
    return this.sleepAt(() => Date.now() + ms);
  }

  sleepUntil(date: Date | string | number): Promise<void> {
    const at = new Date(date).getTime();
    if (Number.isNaN(at)) throw new TypeError(`ctx.sleepUntil: "${String(date)}" is not a date`);
    return this.sleepAt(() => at);
  }

  private async sleepAt(when: () => number): Promise<void> {
    await this.ready();
    const occurrence = this.next('sleep', 'sleep');
    const stored = this.records!.get(keyOf('sleep', 'sleep', occurrence)) as { until: string } | undefined;
    const until = stored ? Date.parse(stored.until) : when();
    if (until <= Date.now()) return;
    const iso = new Date(until).toISOString();
    await this.suspend({
      wait: { type: 'sleep', until: iso },
      record: stored ? undefined : { type: 'sleep', name: 'sleep', occurrence, result: { until: iso } },
    });
  }

  async waitFor<T = unknown>(name: string, opts: { timeoutMs?: number } = {}): Promise<T | null> {
    if (typeof name !== 'string' || !/^[A-Za-z0-9_.:-]{1,128}$/.test(name)) {
      throw new TypeError('ctx.waitFor: the signal name must be 1-128 characters of [A-Za-z0-9_.:-]');
    }
    await this.ready();
    const occurrence = this.next('wait', name);
    const found = this.signals!.get(name);
    if (found) return found.timedOut ? null : (found.payload as T);
    const stored = this.records!.get(keyOf('wait', name, occurrence)) as { until: string | null } | undefined;
    const until = stored ? stored.until : opts.timeoutMs !== undefined ? new Date(Date.now() + opts.timeoutMs).toISOString() : null;
    if (until !== null && Date.parse(until) <= Date.now()) {
      this.live();
      const value = await this.deps.service.timeOut(this.deps.worker, this.a.lease, name);
      if (!value) throw this.lost();
      this.signals!.set(name, value);
      return value.timedOut ? null : (value.payload as T);
    }
    const signal = (await this.suspend({
      wait: { type: 'signal', name, ...(until !== null ? { until } : {}) },
      record: stored ? undefined : { type: 'wait', name, occurrence, result: { until } },
    })) as SignalValue;
    this.signals!.set(name, signal);
    return signal.timedOut ? null : (signal.payload as T);
  }

  async invoke<T = unknown>(kind: string, payload?: unknown, options: InvokeOptions = {}): Promise<T> {
    await this.ready();
    const occurrence = this.next('invoke', kind);
    const stored = this.records!.get(keyOf('invoke', kind, occurrence)) as { childId: string } | undefined;
    const child = (await this.suspend(
      stored
        ? { wait: { type: 'child', childId: stored.childId } }
        : {
            wait: { type: 'child' },
            record: { type: 'invoke', name: kind, occurrence, result: {} },
            // In the parent's queue unless the options name another.
            invoke: { queue: this.a.job.queue, ...options, kind, payload },
          },
    )) as ChildEnd;
    if (child.status === 'succeeded') return child.result as T;
    // Only a replay finds the child ended: the first call always waits for it.
    throw new InvokedJobError(stored?.childId ?? '?', kind, child.status, child.error);
  }

  /** The handler succeeded: name the stored steps it no longer calls (its code changed). */
  finished(): void {
    if (!this.records) return;
    for (const key of this.records.keys()) {
      if (!key.startsWith('step\u0000') || this.met.has(key)) continue;
      const [, name, occurrence] = key.split('\u0000');
      this.deps.logger.warn({ job: this.a.job.id, kind: this.a.job.kind, step: name, occurrence: Number(occurrence) },
        'a stored step was not called on replay (renamed or removed in the code); its result is kept but unused');
    }
  }

  /** Ends the run in the wait `s`, or returns what it waits for when that is already there. */
  private async suspend(s: Suspension): Promise<SignalValue | ChildEnd> {
    this.live();
    const r = await this.deps.service.suspend(this.deps.worker, this.a.lease, s);
    switch (r.kind) {
      case 'lost':
        throw this.lost();
      case 'signal':
        return r.signal;
      case 'child':
        return r.child;
      case 'suspended':
        this.deps.suspended(this.a);
        if (r.status === 'queued' && s.wait.until) this.deps.wakeAt?.(Date.parse(s.wait.until));
        // The run is over: the handler never goes past this call.
        return new Promise<never>(() => {});
    }
  }

  private async ready(): Promise<void> {
    this.live();
    if (++this.calls > MAX_STEPS) throw new RangeError(`job ${this.a.job.id} made more than ${MAX_STEPS} durable calls in one run`);
    if (this.records) return;
    this.loading ??= this.deps.service.load(this.deps.worker, this.a.lease).then((rows) => this.fill(rows));
    await this.loading;
  }

  private fill(rows: RecordRow[]): void {
    this.records = new Map();
    this.signals = new Map();
    for (const r of rows) {
      if (r.type === 'signal') this.signals.set(r.name, r.result as SignalValue);
      else this.records.set(keyOf(r.type, r.name, r.occurrence), r.result);
    }
  }

  private next(type: string, name: string): number {
    const k = `${type}\u0000${name}`;
    const n = this.counts.get(k) ?? 0;
    this.counts.set(k, n + 1);
    return n;
  }

  /** A cancel, timeout or lost lease already ended this run: it writes nothing more. */
  private live(): void {
    if (this.a.aborted) throw this.a.aborted;
  }

  private lost(): Error {
    return new LeaseLostError(this.a.job.id, this.a.job.attempt, this.deps.worker);
  }
}
