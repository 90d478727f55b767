// Why a handler's AbortSignal fired. The reason is what ends up in last_error, so each one
// says in plain words what happened.

/** A cancel was requested (board, API): the failure path ends the job `cancelled`. */
export class JobCancelledError extends Error {
  override name = 'JobCancelledError';
  constructor(jobId: string) {
    super(`job ${jobId} was cancelled on request`);
  }
}

/** The lease is gone (reaped, or taken by a newer attempt): nothing this attempt does is written. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor(jobId: string, attempt: number, worker: string) {
    super(`worker ${worker} lost the lease of job ${jobId} attempt ${attempt}; its outcome is discarded`);
  }
}

/**
 * The attempt ran past the job's timeoutMs. Named TimeoutError, like the reason of
 * AbortSignal.timeout(), so handlers that already tell timeouts apart recognise it.
 */
export class JobTimeoutError extends Error {
  override name = 'TimeoutError';
  constructor(jobId: string, timeoutMs: number) {
    super(`job ${jobId} timed out after ${timeoutMs} ms (timeoutMs)`);
  }
}

/** The worker is shutting down and handed the job back to the queue. */
export class ShutdownError extends Error {
  override name = 'ShutdownError';
  constructor(worker: string) {
    super(`worker ${worker} is shutting down; the job was released to the queue`);
  }
}

/** No task file or built-in for the job's kind on this worker. */
export class UnknownKindError extends Error {
  override name = 'UnknownKindError';
  constructor(kind: string, worker: string) {
    super(`no task for kind "${kind}" on worker ${worker}`);
  }
}
