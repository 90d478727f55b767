// Reading and searching jobs (viewer) and changing them (admin: cancel, retry, bulk actions).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { NotFoundError, ValidationError } from '../../queue/errors.ts';
import type { Job as JobJson } from '../../queue/job.ts';
import type { ServerContext } from '../context.ts';
import { errors, Job, Ref } from '../schemas.ts';
import { bulkBody, bulkResult, idParams, jobEvents, jobEventsQuery, jobPage, listQuery } from './jobs.schema.ts';

const MAX_ID = 2n ** 63n - 1n;

/** The id from the path; one past bigint's range cannot exist, so it is a 404, not a database error. */
export function pathId({ id }: { id: string }, noun = 'job'): string {
  if (BigInt(id) > MAX_ID) throw new NotFoundError(`${noun} ${id} does not exist`);
  return id;
}
const jobId = (params: { id: string }) => pathId(params);

const byId = { params: idParams };

export function jobRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.get(
    '/api/jobs',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['jobs'],
        operationId: 'listJobs',
        summary: 'List and search jobs, newest first',
        description:
          'Page with ?before=<the `next` of the previous page>; `next` is null on the last page. A search by group, tag, payload, ' +
          'error or time range looks at the newest 100,000 jobs (of all queues) below the cursor; when that window ends before ' +
          'the page fills, `searched` says how many jobs were looked at and `next` continues below them.',
        querystring: listQuery,
        response: {
          200: jobPage,
          ...errors(400, 401, 403),
        },
      },
    },
    async (request) => {
      const q = request.query;
      if (q.before !== undefined && BigInt(q.before) > MAX_ID) q.before = MAX_ID.toString();
      return ctx.reads.list(q);
    },
  );

  api.post(
    '/api/jobs/bulk',
    {
      config: { role: 'admin' },
      schema: {
        tags: ['jobs'],
        operationId: 'bulkJobs',
        summary: 'Retry, cancel, delete, redrive or run now every job a filter matches',
        description:
          'retry applies to failed and cancelled jobs, cancel to queued, blocked and running ones (running ones get cancelRequested), ' +
          'delete to succeeded, failed and cancelled ones, with their events, redrive to dead-letter copies, run_now to queued jobs ' +
          'waiting out a backoff or their runAt. Jobs in other statuses ' +
          'count in `matched` and are left alone. A dry run changes nothing and says what the action would affect now. ' +
          'The filter must name a queue, a status or a flow. Works in transactions of at most 1,000 jobs.',
        body: bulkBody,
        response: { 200: bulkResult, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      const { action, filter, dryRun } = request.body;
      if (filter.queue === undefined && filter.status === undefined && filter.flow === undefined) {
        throw new ValidationError('filter must name a queue, a status or a flow: a bulk action over every job is refused');
      }
      if (dryRun) return ctx.queue.bulkDryRun(action, filter);
      const result = await ctx.queue.bulk(action, filter, { actor: request.actor });
      request.log.info({ action, filter, ...result, by: request.actor }, 'bulk action');
      return result;
    },
  );

  api.get(
    '/api/jobs/:id',
    {
      config: { role: 'viewer' },
      schema: { ...byId, tags: ['jobs'], operationId: 'getJob', summary: 'One job', response: { 200: Ref(Job), ...errors(400, 401, 403, 404) } },
    },
    async (request) => {
      const id = jobId(request.params);
      const job = await findJob(ctx, id);
      if (!job) throw new NotFoundError(`job ${id} does not exist`);
      return job;
    },
  );

  api.get(
    '/api/jobs/:id/events',
    {
      config: { role: 'viewer' },
      schema: {
        ...byId,
        tags: ['jobs'],
        operationId: 'listJobEvents',
        summary: "A job's events, oldest first, a page at a time",
        description: 'Page with ?after=<the `next` of the previous page>; `next` is null on the last page.',
        querystring: jobEventsQuery,
        response: {
          200: jobEvents,
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (request) => {
      const id = jobId(request.params);
      const { after, limit } = request.query;
      // An id past bigint's range: nothing comes after it.
      const page = await ctx.reads.eventPage(id, { after: after && BigInt(after) > MAX_ID ? String(MAX_ID) : after, limit });
      // Every job has at least its 'enqueued' event; none means no such job.
      if (page.events.length === 0 && !(await findJob(ctx, id))) throw new NotFoundError(`job ${id} does not exist`);
      return page;
    },
  );

  api.post(
    '/api/jobs/:id/cancel',
    {
      config: { role: 'admin' },
      schema: {
        ...byId,
        tags: ['jobs'],
        operationId: 'cancelJob',
        summary: 'Cancel a job',
        description:
          'A queued or blocked job becomes cancelled; a running one gets cancelRequested and its handler is signalled. A finished one: 409.',
        response: { 200: Ref(Job), ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => ctx.queue.cancel(jobId(request.params), request.actor),
  );

  api.post(
    '/api/jobs/:id/retry',
    {
      config: { role: 'admin' },
      schema: {
        ...byId,
        tags: ['jobs'],
        operationId: 'retryJob',
        summary: 'Retry a failed or cancelled job',
        description: 'The job is queued again with at least one more attempt. Any other status: 409.',
        response: { 200: Ref(Job), ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => ctx.queue.retry(jobId(request.params), request.actor),
  );

  api.post(
    '/api/jobs/:id/run-now',
    {
      config: { role: 'admin' },
      schema: {
        ...byId,
        tags: ['jobs'],
        operationId: 'runJobNow',
        summary: 'Run a job now that waits out its backoff or its runAt',
        description:
          "The job becomes due at once (a `promoted` event, signed with the caller); its attempts are left as they are. A job that is " +
          "due already, running, finished, blocked, or in a durable handler's sleep or wait: 409, and nothing changes.",
        response: { 200: Ref(Job), ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => ctx.queue.runNow(jobId(request.params), request.actor),
  );
}

/** A job from the read side; one it has not replayed yet (enqueued a moment ago) is looked up on the primary before a 404. */
export async function findJob(ctx: Pick<ServerContext, 'queue' | 'reads'>, id: string): Promise<JobJson | null> {
  return (await ctx.reads.get(id)) ?? (ctx.reads === ctx.queue ? null : ctx.queue.get(id));
}
