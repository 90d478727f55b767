// Reading jobs (viewer) and changing them (admin: cancel, retry).
import type { FastifyInstance } from 'fastify';
import { NotFoundError } from '../../queue/errors.ts';
import type { JobStatus } from '../../queue/schema.ts';
import type { ServerContext } from '../context.ts';
import { errors, idParams, jobEvents, jobPage, jobRef, listQuery } from '../schemas.ts';

const MAX_ID = 2n ** 63n - 1n;

/** The id from the path; one past bigint's range cannot exist, so it is a 404, not a database error. */
function jobId(params: unknown): string {
  const { id } = params as { id: string };
  if (BigInt(id) > MAX_ID) throw new NotFoundError(`job ${id} does not exist`);
  return id;
}

const byId = { params: idParams };

export function jobRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get(
    '/api/jobs',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['jobs'],
        operationId: 'listJobs',
        summary: 'List jobs, newest first',
        description: 'Page with ?before=<the `next` of the previous page>; `next` is null on the last page.',
        querystring: listQuery,
        response: {
          200: { description: 'a page of jobs', ...jobPage },
          ...errors(400, 401, 403),
        },
      },
    },
    async (request) => {
      const q = request.query as { queue?: string; status?: JobStatus; kind?: string; limit: number; before?: string };
      if (q.before !== undefined && BigInt(q.before) > MAX_ID) q.before = MAX_ID.toString();
      return ctx.queue.list(q);
    },
  );

  app.get(
    '/api/jobs/:id',
    {
      config: { role: 'viewer' },
      schema: { ...byId, tags: ['jobs'], operationId: 'getJob', summary: 'One job', response: { 200: jobRef, ...errors(400, 401, 403, 404) } },
    },
    async (request) => {
      const id = jobId(request.params);
      const job = await ctx.queue.get(id);
      if (!job) throw new NotFoundError(`job ${id} does not exist`);
      return job;
    },
  );

  app.get(
    '/api/jobs/:id/events',
    {
      config: { role: 'viewer' },
      schema: {
        ...byId,
        tags: ['jobs'],
        operationId: 'listJobEvents',
        summary: "A job's events, oldest first",
        response: {
          200: { description: "the job's events", ...jobEvents },
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (request) => {
      const id = jobId(request.params);
      const events = await ctx.queue.events(id);
      // Every job has at least its 'enqueued' event; none means no such job.
      if (events.length === 0 && !(await ctx.queue.get(id))) throw new NotFoundError(`job ${id} does not exist`);
      return { events };
    },
  );

  app.post(
    '/api/jobs/:id/cancel',
    {
      config: { role: 'admin' },
      schema: {
        ...byId,
        tags: ['jobs'],
        operationId: 'cancelJob',
        summary: 'Cancel a job',
        description: 'A queued job becomes cancelled; a running one gets cancelRequested and its handler is signalled. A finished one: 409.',
        response: { 200: jobRef, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => ctx.queue.cancel(jobId(request.params)),
  );

  app.post(
    '/api/jobs/:id/retry',
    {
      config: { role: 'admin' },
      schema: {
        ...byId,
        tags: ['jobs'],
        operationId: 'retryJob',
        summary: 'Retry a failed or cancelled job',
        description: 'The job is queued again with at least one more attempt. Any other status: 409.',
        response: { 200: jobRef, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => ctx.queue.retry(jobId(request.params)),
  );
}
