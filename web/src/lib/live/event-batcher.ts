// Event batching: the stream can deliver thousands of events a second; the board applies them
// once per animation frame so the DOM is touched once per frame, not once per event.

export type Scheduler = (run: () => void) => void;

export class EventBatcher<T> {
  #queue: T[] = [];
  #pending = false;

  constructor(
    private readonly onFlush: (batch: T[]) => void,
    private readonly schedule: Scheduler,
  ) {}

  push(item: T): void {
    this.#queue.push(item);
    if (!this.#pending) {
      this.#pending = true;
      this.schedule(() => this.flush());
    }
  }

  /** Applies everything queued so far in one call. Safe to call early (the scheduled run is then a no-op). */
  flush(): void {
    this.#pending = false;
    if (this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
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
