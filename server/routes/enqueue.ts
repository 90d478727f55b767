// POST /api/jobs and POST /api/jobs/batch: producers add work.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ValidationError } from '../../queue/errors.ts';
import type { ServerContext } from '../context.ts';
import { waitForEnd } from '../stream/wait.ts';
import { errors, Job, Ref } from '../schemas.ts';
import { batchBody, batchReply, enqueueBody, enqueueQuery, idempotencyHeaders } from './enqueue.schema.ts';

/** An abort signal for a held reply: the client went away, or the server is closing. */
function holdSignal(reply: FastifyReply, closing: AbortSignal): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => gone.abort());
  return AbortSignal.any([gone.signal, closing]);
}

export function enqueueRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.post(
    '/api/jobs',
    {
      config: { role: 'producer' },
      schema: {
        tags: ['jobs'],
        operationId: 'enqueueJob',
        summary: 'Enqueue a job',
        description:
          'A reused idempotency key (the Idempotency-Key header or the idempotencyKey field) returns the job it made (200), ' +
          'or 409 when the kind, queue or payload differ. With ?wait=MS the reply waits until the job ends (202: it has not yet). ' +
          'The Herald-Job-Created header says whether this request made the job.',
        body: enqueueBody,
        querystring: enqueueQuery,
        headers: idempotencyHeaders,
        response: {
          200: Ref(Job, { description: 'the job this idempotency key made before' }),
          201: Ref(Job, { description: 'a new job' }),
          202: Ref(Job, { description: 'the wait ran out; the job as it is now' }),
          ...errors(400, 401, 403, 409, 413, 415, 503),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const header = request.headers['idempotency-key'];
      if (header !== undefined && body.idempotencyKey !== undefined && header !== body.idempotencyKey) {
        throw new ValidationError('the Idempotency-Key header and the idempotencyKey field differ; send one of them, or the same key in both');
      }
      const { job, created } = await ctx.queue.enqueue({ ...body, idempotencyKey: header ?? body.idempotencyKey });
      reply.header('herald-job-created', String(created));
      const wait = request.query.wait ?? 0;
      if (wait === 0) return reply.code(created ? 201 : 200).send(job);
      const held = await waitForEnd(ctx.queue, ctx.hub.fanout, job.id, wait, holdSignal(reply, ctx.closing));
      // Cut short by shutdown: close the connection after this reply so close() need not wait for it.
      if (ctx.closing.aborted) reply.header('connection', 'close');
      return reply.code(held.ended ? (created ? 201 : 200) : 202).send(held.job ?? job);
    },
  );

  api.post(
    '/api/jobs/batch',
    {
      config: { role: 'producer' },
      schema: {
        tags: ['jobs'],
        operationId: 'enqueueJobs',
        summary: 'Enqueue up to 1000 jobs, all or nothing',
        description: 'One bad job rejects the whole batch with 400, naming its index; nothing is written.',
        body: batchBody,
        response: {
          201: batchReply,
          ...errors(400, 401, 403, 409, 413, 415, 503),
        },
      },
    },
    async (request, reply) => {
      const results = await ctx.queue.enqueueMany(request.body.jobs);
      return reply.code(201).send({ jobs: results.map((r) => r.job) });
    },
  );
}
