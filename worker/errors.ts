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
 * No renewal reached the database before the lease ran out (as this worker counts it): the job
 * may go to another worker, so this handler stops; nothing it does is written.
 */
export class LeaseExpiredError extends Error {
  override name = 'LeaseExpiredError';
  constructor(jobId: string, attempt: number, worker: string) {
    super(`worker ${worker} could not renew the lease of job ${jobId} attempt ${attempt} before it ran out (database unreachable); its outcome is discarded`);
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

/**
 * Thrown by a handler, fails the job for good at once, whatever attempts it has left (a declined
 * card is not charged again).
 */
export class UnrecoverableError extends Error {
  override name = 'UnrecoverableError';
}

/** ctx.invoke's job failed or was cancelled: its error, thrown where the handler invoked it. */
export class InvokedJobError extends Error {
  override name = 'InvokedJobError';
  constructor(readonly jobId: string, kind: string, readonly status: string, error: string | null) {
    super(`invoked job ${jobId} (${kind}) ${status}${error ? `: ${error}` : ''}`);
  }
}

/** No task file or built-in for the job's kind on this worker. */
export class UnknownKindError extends Error {
  override name = 'UnknownKindError';
  constructor(kind: string, worker: string) {
    super(`no task for kind "${kind}" on worker ${worker}`);
  }
}
