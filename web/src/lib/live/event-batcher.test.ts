// Unit tests for one flush per frame (event-batcher.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import { EventBatcher } from './event-batcher';

describe('EventBatcher', () => {
  it('applies many events in one flush per scheduled frame', () => {
    const frames: (() => void)[] = [];
    const flushed: number[][] = [];
    const b = new EventBatcher<number>((batch) => flushed.push(batch), (run) => frames.push(run));
    for (let i = 0; i < 1000; i++) b.push(i);
    expect(frames).toHaveLength(1); // one frame requested, not one per event
    expect(flushed).toHaveLength(0);
    frames.shift()!();
    expect(flushed).toHaveLength(1);
    expect(flushed[0]).toHaveLength(1000);
    expect(flushed[0][999]).toBe(999);

    b.push(1);
    b.push(2);
    expect(frames).toHaveLength(1);
    frames.shift()!();
    expect(flushed[1]).toEqual([1, 2]);
  });

  it('tolerates an early flush', () => {
    const frames: (() => void)[] = [];
    const flushed: number[][] = [];
    const b = new EventBatcher<number>((batch) => flushed.push(batch), (run) => frames.push(run));
    b.push(1);
    b.flush();
    frames.shift()!(); // the scheduled run finds nothing
    expect(flushed).toEqual([[1]]);
  });

  // Catches `this.#queue = batch.slice(this.maxPerFlush)` dropped (the rest lost) and the
  // `this.#request()` after it dropped (the rest stranded until the next push).
  it('takes at most maxPerFlush a frame and leaves the rest, in order, to the frames after', () => {
    const frames: (() => void)[] = [];
    const flushed: number[][] = [];
    const b = new EventBatcher<number>((batch) => flushed.push(batch), (run) => frames.push(run), 400);
    for (let i = 0; i < 1000; i++) b.push(i);
    expect(frames).toHaveLength(1);
    frames.shift()!();
    expect(flushed.map((x) => x.length)).toEqual([400]);
    expect(b.size).toBe(600);
    expect(frames).toHaveLength(1); // the rest asked for a frame of its own
    b.push(1000); // no second request while one is pending
    expect(frames).toHaveLength(1);
    frames.shift()!();
    frames.shift()!();
    expect(frames).toHaveLength(0);
    expect(flushed.map((x) => x.length)).toEqual([400, 400, 201]);
    expect(flushed.flat()).toEqual(Array.from({ length: 1001 }, (_, i) => i));
  });
});
