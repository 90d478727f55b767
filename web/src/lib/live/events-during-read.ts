// An HTTP read answers from one moment during the request, and the stream's events for the same
// jobs can arrive before its reply. A page that then shows the reply as is goes back in time, and
// stays there when no later event comes (a job held at 60% shows the 0% it had when read). So the
// events that arrive while a read is in flight are kept and applied again to its reply, in order.
// That is safe for events the reply already reflects: each event sets the fields it carries, and
// every event after it follows, during the read or after it.
import type { BoardEvent, BoardJob } from '../types';
import { applyEventToJob } from './job-updates';

export class EventsDuringRead {
  readonly #open = new Set<BoardEvent[]>();

  /** Call with every event the page takes from the stream. */
  note(events: readonly BoardEvent[]): void {
    for (const seen of this.#open) seen.push(...events);
  }

  /** Runs `read`, and returns its reply with the events noted meanwhile, oldest first. */
  async read<T>(read: () => Promise<T>): Promise<{ reply: T; seen: BoardEvent[] }> {
    const seen: BoardEvent[] = [];
    this.#open.add(seen);
    try {
      return { reply: await read(), seen };
    } finally {
      this.#open.delete(seen);
    }
  }
}

/** `read` through `events`; when the reply is a job, the events noted meanwhile are applied to it. */
export async function readJobDuring<T>(events: EventsDuringRead, read: () => Promise<T>): Promise<T> {
  const { reply, seen } = await events.read(read);
  if (reply && typeof reply === 'object' && 'id' in reply) for (const e of seen) applyEventToJob(reply as BoardJob, e);
  return reply;
}
