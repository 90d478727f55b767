// What a handler sees of the job it runs (TaskContext), and the job's abort. Its parts are made
// when the handler first uses them: a handler that reads none of them (a no-op job) pays for none.
import { DEFAULTS } from '../queue/defaults.ts';
import type { Logger } from '../queue/log.ts';
import type { Parent } from '../queue/services/flows.ts';
import { DurableRun } from './durable.ts';
import { ProgressCoalescer } from './progress.ts';
import type { ActiveJob } from './active-job.ts';
import type { SlotsOptions } from './slots.ts';
import type { TaskContext } from './tasks.ts';

type ContextOptions = Pick<SlotsOptions, 'logger' | 'progress' | 'progressEveryMs' | 'durable'>;

/**
 * One object per job, its parts on the prototype: an object literal of getters and methods made
 * ten closures per job, most of a no-op job's allocations. The methods are made, bound to the
 * job, when a handler first reads them, so `const { progress } = ctx` works as before.
 */
class HandlerContext implements TaskContext {
  private logger?: Logger;
  private methods?: Pick<TaskContext, 'progress' | 'step' | 'sleep' | 'sleepUntil' | 'waitFor' | 'invoke'>;

  constructor(
    private readonly a: ActiveJob,
    readonly parents: Parent[],
    private readonly opts: ContextOptions,
    private readonly suspended: (a: ActiveJob) => void,
  ) {}

  get job() {
    return this.a.job.job;
  }

  get signal() {
    return signalOf(this.a);
  }

  // A pino child costs a few microseconds.
  get log() {
    const { a } = this;
    return (this.logger ??= this.opts.logger.child({ job: a.job.id, kind: a.job.kind, attempt: a.job.attempt }));
  }

  get progress() {
    return this.bound().progress;
  }

  get step() {
    return this.bound().step;
  }

  get sleep() {
    return this.bound().sleep;
  }

  get sleepUntil() {
    return this.bound().sleepUntil;
  }

  get waitFor() {
    return this.bound().waitFor;
  }

  get invoke() {
    return this.bound().invoke;
  }

  private bound(): NonNullable<HandlerContext['methods']> {
    if (this.methods) return this.methods;
    const { a, opts, suspended } = this;
    return (this.methods = {
      progress(percent, message) {
        a.progress ??= new ProgressCoalescer((p, m) => opts.progress(a, p, m), opts.progressEveryMs ?? DEFAULTS.progressEveryMs);
        return a.progress.report(percent, message);
      },
      step: (name, fn) => durableOf(a, opts, suspended).step(name, fn),
      sleep: (ms) => durableOf(a, opts, suspended).sleep(ms),
      sleepUntil: (date) => durableOf(a, opts, suspended).sleepUntil(date),
      waitFor: (name, o) => durableOf(a, opts, suspended).waitFor(name, o),
      invoke: (kind, payload, o) => durableOf(a, opts, suspended).invoke(kind, payload, o),
    });
  }
}

export function handlerContext(a: ActiveJob, parents: Parent[], opts: ContextOptions, suspended: (a: ActiveJob) => void): TaskContext {
  return new HandlerContext(a, parents, opts, suspended);
}

/** The job's durable run, made at its first durable call. */
function durableOf(a: ActiveJob, opts: Pick<SlotsOptions, 'logger' | 'durable'>, suspended: (a: ActiveJob) => void): DurableRun {
  if (a.durable) return a.durable;
  if (!opts.durable) throw new Error('durable calls (ctx.step, sleep, waitFor, invoke) need a worker with a database');
  return (a.durable = new DurableRun(a, { ...opts.durable, logger: opts.logger, suspended }));
}

/** Aborts the job (its first reason stands) and fires its signal if the handler has made it. */
export function abort(a: ActiveJob, reason: Error): Error {
  if (a.aborted) return a.aborted;
  a.aborted = reason;
  a.controller?.abort(reason);
  return reason;
}

/** The job's signal, made on first use: already fired if the job was aborted before. */
function signalOf(a: ActiveJob): AbortSignal {
  if (!a.controller) {
    a.controller = new AbortController();
    if (a.aborted) a.controller.abort(a.aborted);
  }
  return a.controller.signal;
}
