// Event batching: the stream can deliver thousands of events a second; the board applies them
// once per animation frame so the DOM is touched once per frame, not once per event. A frame
// takes at most `maxPerFlush` of them and leaves the rest to the next: after a stall (a busy
// tab, a burst) the backlog is worked off over a few frames instead of in one long task.

export type Scheduler = (run: () => void) => void;

export class EventBatcher<T> {
  #queue: T[] = [];
  #pending = false;

  constructor(
    private readonly onFlush: (batch: T[]) => void,
    private readonly schedule: Scheduler,
    private readonly maxPerFlush = Infinity,
  ) {}

  push(item: T): void {
    this.#queue.push(item);
    this.#request();
  }

  #request(): void {
    if (!this.#pending) {
      this.#pending = true;
      this.schedule(() => this.flush());
    }
  }

  /**
   * Applies what is queued, up to `maxPerFlush` items, in one call; what is left gets a frame of
   * its own. Safe to call early (the scheduled run then finds less, or nothing, to do).
   */
  flush(): void {
    this.#pending = false;
    if (this.#queue.length === 0) return;
    let batch = this.#queue;
    if (batch.length > this.maxPerFlush) {
      this.#queue = batch.slice(this.maxPerFlush);
      batch = batch.slice(0, this.maxPerFlush);
      this.#request();
    } else {
      this.#queue = [];
    }
    this.onFlush(batch);
  }

  get size(): number {
    return this.#queue.length;
  }
}

/**
 * Next animation frame, with a timer as a fallback: browsers stop animation frames in hidden
 * tabs, and the queue must not grow without bound meanwhile.
 */
export function frameScheduler(run: () => void): void {
  let done = false;
  let frame = 0;
  const go = () => {
    if (done) return;
    done = true;
    if (typeof cancelAnimationFrame === 'function') cancelAnimationFrame(frame);
    clearTimeout(timer);
    run();
  };
  const timer = setTimeout(go, 250);
  if (typeof requestAnimationFrame === 'function') frame = requestAnimationFrame(go);
}
