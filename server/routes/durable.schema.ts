// The schemas of a durable job's steps and of the signals sent to it.
import { Type } from 'typebox';
import { DateTime, JobId, Name } from '../schemas.ts';

export const signalParams = Type.Object({ id: JobId(), name: Name('the signal, as the handler waits for it (ctx.waitFor)') });

export const signalBody = Type.Object(
  { payload: Type.Optional(Type.Unknown({ description: "what the handler's ctx.waitFor returns (JSON; null when absent)" })) },
  { additionalProperties: false },
);

export const signalReply = Type.Object({
  jobId: Type.String(),
  name: Type.String(),
  woken: Type.Boolean({ description: 'true: the job was waiting for it and resumes now; false: it is kept until the job waits for it' }),
});

const Step = Type.Object({
  name: Type.String(),
  occurrence: Type.Integer({ description: 'the n-th call of this name in a run, from 0' }),
  attempt: Type.Integer({ description: 'the attempt that stored it' }),
  startedAt: DateTime(),
  finishedAt: DateTime(),
  ms: Type.Integer(),
  result: Type.Unknown(),
});

export const stepsReply = Type.Object({ steps: Type.Array(Step, { description: 'in the order they finished' }) });
