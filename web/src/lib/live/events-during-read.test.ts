// Replaying the events that arrive during a read (events-during-read.ts): no browser, no server.
import { describe, expect, it } from 'vitest';
import type { BoardJob } from '../types';
import { EventsDuringRead } from './events-during-read';
import { applyEventToJob, jobFromEvent } from './job-updates';
import { ev } from './test-events';

/** A read the test answers when it wants to. */
function heldRead<T>() {
  let answer!: (v: T) => void;
  let fail!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((answer = res), (fail = rej)));
  return { read: () => promise, answer, fail };
}

describe('EventsDuringRead', () => {
  it('gives a reply older than the stream the events that came meanwhile, so it ends where the stream is', async () => {
    const events = new EventsDuringRead();
    const enqueued = ev('7', 'enqueued', 'queued');
    const claimed = ev('7', 'claimed', 'running');
    const progress = ev('7', 'progress', 'running', { data: { percent: 60 } });
    // The server read the job just after its claim; the claim and the progress reach the page first.
    const snapshot: BoardJob = jobFromEvent(enqueued);
    applyEventToJob(snapshot, claimed);
    const held = heldRead<BoardJob>();
    const reading = events.read(held.read);
    events.note([claimed, progress]);
    held.answer(snapshot);
    const { reply, seen } = await reading;
    expect(seen).toEqual([claimed, progress]);
    for (const e of seen) applyEventToJob(reply, e);
    expect(reply.status).toBe('running');
    expect(reply.progress?.percent).toBe(60);
    // Events after the reply are the page's own business again.
    events.note([ev('7', 'succeeded', 'succeeded')]);
    expect(seen).toHaveLength(2);
  });

  it('keeps each read its own events, and forgets a read that failed', async () => {
    const events = new EventsDuringRead();
    const first = heldRead<string>();
    const second = heldRead<string>();
    const a = events.read(first.read);
    const e1 = ev('1', 'enqueued', 'queued');
    events.note([e1]);
    const b = events.read(second.read);
    const e2 = ev('1', 'claimed', 'running');
    events.note([e2]);
    first.fail(new Error('offline'));
    await expect(a).rejects.toThrow('offline');
    const e3 = ev('1', 'succeeded', 'succeeded');
    events.note([e3]);
    second.answer('ok');
    expect(await b).toEqual({ reply: 'ok', seen: [e2, e3] });
  });
});
