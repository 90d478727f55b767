// Unit tests for one flush per frame (event-batcher.ts): no browser, no server. The clock is a
// counter the prepare step moves, so "how long a flush took" is exact.

import { describe, expect, it } from 'vitest';
import { EventBatcher } from './event-batcher';

/** A batcher whose every prepared item costs `msPerItem` on its clock; odd items dropped if asked. */
function setup(budgetMs: number, msPerItem = 1, dropOdd = false) {
  const frames: (() => void)[] = [];
  const flushed: number[][] = [];
  let clock = 0;
  const b = new EventBatcher<number, number>((batch) => flushed.push(batch), (run) => frames.push(run), {
    prepare: (n) => {
      clock += msPerItem;
      return dropOdd && n % 2 ? null : n;
    },
    budgetMs: () => budgetMs,
    now: () => clock,
  });
  return { b, frames, flushed };
}

/** Runs scheduled frames until none is left; a batcher that never finishes fails, not hangs. */
function runFrames(frames: (() => void)[], onFrame = () => {}) {
  for (let n = 0; frames.length; n++) {
    if (n > 10_000) throw new Error('frames never ran out');
    frames.shift()!();
    onFrame();
  }
}

describe('EventBatcher', () => {
  it('applies many events in one flush per scheduled frame', () => {
    const { b, frames, flushed } = setup(Infinity);
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
    const { b, frames, flushed } = setup(Infinity);
    b.push(1);
    b.flush();
    frames.shift()!(); // the scheduled run finds nothing
    expect(flushed).toEqual([[1]]);
  });

  it('hands on only what prepare keeps', () => {
    const { b, frames, flushed } = setup(Infinity, 1, true);
    for (let i = 0; i < 6; i++) b.push(i);
    frames.shift()!();
    expect(flushed).toEqual([[0, 2, 4]]);
    b.push(1); // all dropped: no empty batch
    frames.shift()!();
    expect(flushed).toHaveLength(1);
  });

  // Catches the deadline check dropped from the loop's condition (the whole backlog in one
  // flush: [1000]), `this.#head = i` dropped (the same prefix again: items repeated) and the
  // `this.#request()` after it dropped (the rest stranded until the next push).
  it('prepares until the budget is spent and leaves the rest, in order, to the frames after', () => {
    const { b, frames, flushed } = setup(400);
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
    expect(b.size).toBe(0);
  });

  it('takes at least one item a frame when one alone outlasts the budget', () => {
    const { b, frames, flushed } = setup(1, 5);
    for (let i = 0; i < 3; i++) b.push(i);
    runFrames(frames);
    expect(flushed).toEqual([[0], [1], [2]]);
  });

  // A long backlog worked off in small flushes: the taken prefix is dropped now and then (the
  // compaction), and nothing is lost or repeated across it.
  it('keeps order across the compaction of a long backlog', () => {
    const { b, frames, flushed } = setup(1000);
    const n = 20_000;
    for (let i = 0; i < n; i++) b.push(i);
    let pushed = n;
    runFrames(frames, () => {
      if (pushed < n + 50) b.push(pushed++); // new items arrive while the backlog drains
    });
    expect(flushed.flat()).toEqual(Array.from({ length: pushed }, (_, i) => i));
    expect(b.size).toBe(0);
  });
});
