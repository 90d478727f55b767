// Idempotency keys that start with `schedule:` belong to the scheduler: the job of schedule NAME
// for tick T has the key schedule:NAME:T. A producer's job holding such a key would make that
// tick conflict (another kind) or silently stand in for it (the same kind), so producers get a
// ValidationError (400) instead.
import { ValidationError } from './errors.ts';

const PREFIX = 'schedule:';

export const scheduleKey = (name: string, tick: Date): string => `${PREFIX}${name}:${tick.toISOString()}`;

/** Refuses a producer's key that the scheduler reserves. */
export function checkProducerKey(key: string | null | undefined): void {
  if (key?.startsWith(PREFIX)) {
    throw new ValidationError(`idempotencyKey "${key.slice(0, 100)}" starts with "${PREFIX}", which is reserved for the jobs schedules make`);
  }
}
