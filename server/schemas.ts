// What the route schemas share: the name rule, the Job, JobEvent and Error components, and small
// builders. Each route's own schemas sit beside it (routes/<name>.schema.ts). They are TypeBox
// schemas: plain JSON Schema for Fastify (validation, serialisation) and @fastify/swagger
// (/api/openapi.json), and, through the TypeBox type provider, the TypeScript types of each
// route's request and reply. Field limits match the database's checks (queue/schema/), so a
// request the schema accepts is one the table stores.
import { Type, type Static, type TObject, type TSchema } from 'typebox';
import { EVENT_TYPES, JOB_STATUSES } from '../queue/schema/index.ts';
import { ON_PARENT_FAILURE, WAITING_REASONS } from '../queue/job.ts';
import { ERROR_CODES } from '../queue/errors.ts';
import { MAX_NAME_LENGTH } from '../queue/defaults.ts';
import { NAME_CHARS } from '../queue/schema/base.ts';

export const Name = (description: string) =>
  Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, pattern: `^${NAME_CHARS}+$`, description });
export const JobId = (description = 'a job id (digits)') => Type.String({ pattern: '^[0-9]{1,19}$', description });
export const DateTime = (description?: string) => Type.String({ format: 'date-time', ...(description ? { description } : {}) });

/**
 * A string from a fixed list, written `{type: 'string', enum}` (TypeBox's unions are anyOf of
 * consts: a longer document and a slower serialiser for the same values).
 */
export const OneOf = <const V extends readonly string[]>(values: V, options: object = {}) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: values, ...options });

/** The schema or null, written `type: [T, 'null']` rather than anyOf, for the same reasons. */
export const Nullable = <S extends TSchema & { type: string }>(schema: S, options: object = {}) =>
  Type.Unsafe<Static<S> | null>({ ...schema, type: [schema.type, 'null'], ...options });

/** A $ref to a component registered with app.addSchema (it keeps its $id as its OpenAPI name). */
export const Ref = <S extends TSchema>(component: S, options: object = {}) =>
  Type.Unsafe<Static<S>>({ $ref: `${String((component as { $id?: string }).$id)}#`, ...options });

/** The same schema with its own description (the OpenAPI document shows it on the reply). */
export const Described = <S extends TSchema>(schema: S, description: string) => Type.Unsafe<Static<S>>({ ...schema, description });

export const Job = Type.Object(
  {
    id: Type.String(),
    queue: Type.String(),
    kind: Type.String(),
    payload: Type.Unknown(),
    priority: Type.Integer(),
    status: OneOf(JOB_STATUSES),
    attempt: Type.Integer(),
    maxAttempts: Type.Integer(),
    requires: Type.Array(Type.String()),
    idempotencyKey: Nullable(Type.String()),
    runAt: DateTime(),
    createdAt: DateTime(),
    startedAt: Nullable(DateTime()),
    finishedAt: Nullable(DateTime()),
    lockedBy: Nullable(Type.String()),
    leaseExpiresAt: Nullable(DateTime()),
    cancelRequested: Type.Boolean(),
    progress: Nullable(Type.Object({ percent: Type.Optional(Type.Number()), message: Type.Optional(Nullable(Type.String())) })),
    result: Type.Unknown(),
    lastError: Nullable(Type.Object({ message: Type.Optional(Type.String()) }, { additionalProperties: true })),
    group: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    timeoutMs: Nullable(Type.Integer()),
    expireAt: Nullable(DateTime()),
    deadLetterOf: Nullable(Type.String(), { description: 'on a dead-letter copy: the job whose terminal failure made it' }),
    waitingFor: Type.Unsafe<(typeof WAITING_REASONS)[number] | null>({
      type: ['string', 'null'],
      enum: [...WAITING_REASONS, null],
      description: 'why a queued or blocked job is held back: its parents (dependencies), runAt ahead, queue paused, a limit reached, or no live worker takes it',
    }),
    flowId: Nullable(Type.String(), { description: 'the flow that made the job' }),
    ref: Nullable(Type.String(), { description: 'its ref in that flow' }),
    dependsOn: Type.Array(Type.String(), { description: 'the job ids it waits for, in order' }),
    onParentFailure: Type.Unsafe<(typeof ON_PARENT_FAILURE)[number] | null>({
      type: ['string', 'null'],
      enum: [...ON_PARENT_FAILURE, null],
      description: 'null for a job without parents',
    }),
    wait: Nullable(
      Type.Object({
        type: OneOf(['sleep', 'signal', 'child'] as const),
        name: Type.Optional(Type.String()),
        until: Type.Optional(Nullable(DateTime())),
        childId: Type.Optional(Type.String()),
      }),
      { description: 'a queued durable job: what its handler sleeps or waits for (ctx.sleep, waitFor, invoke); null otherwise' },
    ),
    invokedBy: Nullable(Type.String(), { description: 'a job made by ctx.invoke: the job that waits for its result' }),
  },
  { $id: 'Job', title: 'Job' },
);

/** A job_events row as the API shows it; the SSE `data:` has the same fields. */
export const JobEvent = Type.Object(
  {
    eventId: Type.String(),
    jobId: Type.String(),
    queue: Type.String(),
    kind: Type.String(),
    type: OneOf(EVENT_TYPES),
    status: OneOf(JOB_STATUSES),
    attempt: Type.Integer(),
    worker: Nullable(Type.String()),
    at: DateTime(),
    data: Type.Unknown(),
    flowId: Nullable(Type.String()),
  },
  { $id: 'JobEvent', title: 'JobEvent' },
);

/** Every error reply: Fastify's {statusCode, error, message}, and a stable code (queue/errors.ts). */
const ErrorReply = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String(),
    message: Type.String(),
    code: OneOf(Object.keys(ERROR_CODES) as (keyof typeof ERROR_CODES)[], { description: 'stable: switch on it (README, "Error codes"); the message may change' }),
  },
  { $id: 'Error', title: 'Error' },
);

/** The error replies a route can give, for the OpenAPI document. */
export function errors<const C extends readonly number[]>(...codes: C) {
  const ref = Ref(ErrorReply);
  return Object.fromEntries(codes.map((c) => [c, ref])) as { [K in C[number]]: typeof ref };
}

/** Components every route may $ref; a route's own component is registered beside it. */
export const sharedSchemas: TObject[] = [Job, JobEvent, ErrorReply];
