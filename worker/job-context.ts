// What a handler sees of the job it runs (TaskContext), and the job's abort. Its parts are made
// when the handler first uses them: a handler that reads none of them (a no-op job) pays for none.
import { DEFAULTS } from '../queue/defaults.ts';
import type { Logger } from '../queue/log.ts';
import type { Parent } from '../queue/services/flows.ts';
import { ProgressCoalescer } from './progress.ts';
import type { ActiveJob, SlotsOptions } from './slots.ts';
import type { TaskContext } from './tasks.ts';

// Methods, not arrow functions: tsx names every arrow function bound to a name (esbuild's
// keepNames), a property write per job.
export function handlerContext(a: ActiveJob, parents: Parent[], opts: Pick<SlotsOptions, 'logger' | 'progress' | 'progressEveryMs'>): TaskContext {
  let log: Logger | undefined;
  return {
    get job() {
      return a.job.job;
    },
    parents,
    get signal() {
      return signalOf(a);
    },
    progress(percent, message) {
      a.progress ??= new ProgressCoalescer((p, m) => opts.progress(a, p, m), opts.progressEveryMs ?? DEFAULTS.progressEveryMs);
      return a.progress.report(percent, message);
    },
    // A pino child costs a few microseconds.
    get log() {
      return (log ??= opts.logger.child({ job: a.job.id, kind: a.job.kind, attempt: a.job.attempt }));
    },
  };
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
