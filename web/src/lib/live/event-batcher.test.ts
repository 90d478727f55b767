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
});
