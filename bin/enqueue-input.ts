// `herald enqueue`'s options become the same input POST /api/jobs takes, checked by the same
// JSON Schema (server/routes/enqueue.schema.ts) and explained by the same messages (server/errors.ts), so a
// bad option is refused before anything starts, never by a database constraint.
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { InvalidArgumentError } from 'commander';
import type { EnqueueInput } from '../queue/queue.ts';
import { enqueueBody } from '../server/routes/enqueue.schema.ts';
import { validationMessage } from '../server/errors.ts';

/** What commander parses from `herald enqueue`'s options (numbers stay text when they are not integers). */
export interface EnqueueOptions {
  queue?: string;
  priority?: number | string;
  runAt?: string;
  maxAttempts?: number | string;
  idempotencyKey?: string;
  group?: string;
  tags?: string[];
  requires?: string[];
  timeoutMs?: number | string;
  expireAt?: string;
  dependsOn?: string[];
  onParentFailure?: string;
}

/** An option value that is an integer becomes a number; anything else stays text for the schema to refuse. */
export const integerOrText = (v: string): number | string => (/^-?\d+$/.test(v.trim()) ? Number(v) : v);

let validate: ReturnType<Ajv['compile']> | undefined;

/** The job to enqueue, or an InvalidArgumentError saying which option is wrong and what it must be. */
export function enqueueInputOf(kind: string, payloadText: string, opts: EnqueueOptions): EnqueueInput {
  let payload: unknown;
  try {
    payload = JSON.parse(payloadText);
  } catch {
    throw new InvalidArgumentError(`payload is not valid JSON: ${payloadText}`);
  }
  const input = Object.fromEntries(Object.entries({ kind, payload, ...opts }).filter(([, v]) => v !== undefined));
  if (!validate) {
    const ajv = new Ajv({ allErrors: false, strict: false });
    addFormats.default(ajv, ['date-time']);
    validate = ajv.compile(enqueueBody);
  }
  if (!validate(input)) {
    const message = validationMessage(validate.errors ?? [], 'body');
    // "priority must be …" reads "--priority must be …"; the kind is an argument, not an option.
    throw new InvalidArgumentError(message.replace(/^[a-z][A-Za-z]*/, (f) => (f === 'kind' ? f : `--${f.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`)));
  }
  // The API takes a past expireAt (the job expires at once, as it would a moment later); typed by
  // hand, it is a mistake.
  if (opts.expireAt !== undefined && Date.parse(opts.expireAt) <= Date.now()) {
    throw new InvalidArgumentError(`--expire-at must be a time to come: ${opts.expireAt} has passed, and the job would expire at once`);
  }
  return input as unknown as EnqueueInput;
}
