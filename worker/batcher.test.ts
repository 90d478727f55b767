import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Batcher } from './batcher.ts';

const logger = pino({ level: 'silent' });
const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

describe('Batcher', () => {
  it('flushes what gathered within the delay as one batch', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number>({ name: 't', maxSize: 100, delayMs: 1, logger, flush: async (items) => void batches.push(items) });
    for (let i = 0; i < 5; i++) b.add(i);
    await b.drain();
    expect(batches).toEqual([[0, 1, 2, 3, 4]]);
  });

  it('flushes at once when full, and never runs two flushes at a time', async () => {
    const batches: number[][] = [];
    let inFlight = 0;
    let most = 0;
    const b = new Batcher<number>({
      name: 't', maxSize: 3, delayMs: 1_000, logger,
      flush: async (items) => {
        most = Math.max(most, ++inFlight);
        batches.push(items);
        await tick();
        inFlight--;
      },
    });
    for (let i = 0; i < 7; i++) b.add(i);
    expect(batches).toEqual([[0, 1, 2]]); // full: no waiting for the 1 s delay
    await b.drain();
    expect(batches).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(most).toBe(1);
  });

  // Mutation caught: schedule() without `|| this.opts.delayMs === 0` (a lone item would wait for a timer).
  it('with a delay of 0 flushes a lone item at once, and batches only what arrives during a flush', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const b = new Batcher<number>({
      name: 't', maxSize: 100, delayMs: 0, logger,
      flush: async (items) => {
        batches.push(items);
        if (batches.length === 1) await new Promise<void>((r) => (release = r));
      },
    });
    b.add(0);
    expect(batches).toEqual([[0]]); // at once: no timer
    b.add(1);
    b.add(2);
    expect(batches).toEqual([[0]]); // one flush at a time
    release();
    await b.drain();
    expect(batches).toEqual([[0], [1, 2]]);
  });

  it('retries a failed flush with the same items', async () => {
    const seen: number[][] = [];
    let fails = 2;
    const b = new Batcher<number>({
      name: 't', maxSize: 10, delayMs: 1, logger,
      flush: async (items) => {
        seen.push([...items]);
        if (fails-- > 0) throw new Error('connection reset');
      },
    });
    b.add(1);
    b.add(2);
    await b.drain();
    expect(seen).toEqual([[1, 2], [1, 2], [1, 2]]);
    expect(b.pending).toBe(0);
  });
});
