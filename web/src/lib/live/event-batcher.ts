// Event batching: the stream can deliver thousands of events a second; the board applies them
// once per animation frame so the DOM is touched once per frame, not once per event.
//
// A frame's flush prepares items (the store parses each message) until its time budget is spent
// and leaves the rest to the next frame. A count cannot bound a task: the same thousand messages
// parse in 5 ms on one machine and 80 on another, and after a stall (a busy tab, a long layout)
// the backlog would be parsed in one long task that stalls the next frame in turn.

export type Scheduler = (run: () => void) => void;

export interface BatcherOptions<T, U> {
  /** Turns an item into what a flush hands on; null drops it (a bad or duplicate message). */
  prepare: (item: T) => U | null;
  /**
   * Preparing stops once a flush has run this long; the rest waits for the next frame. Asked at
   * each flush: a hidden tab renders nothing and flushes only on a slow timer, so it takes all.
   */
  budgetMs: () => number;
  now?: () => number;
}

export class EventBatcher<T, U> {
  #queue: T[] = [];
  /** Index of the first item not yet taken (a flush takes a prefix without copying the rest). */
  #head = 0;
  #pending = false;
  readonly #prepare: (item: T) => U | null;
  readonly #budgetMs: () => number;
  readonly #now: () => number;

  constructor(
    private readonly onFlush: (batch: U[]) => void,
    private readonly schedule: Scheduler,
    options: BatcherOptions<T, U>,
  ) {
    this.#prepare = options.prepare;
    this.#budgetMs = options.budgetMs;
    this.#now = options.now ?? (() => performance.now());
  }

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
   * Prepares queued items until the budget is spent (at least one, so a backlog always moves),
   * then hands what it prepared to `onFlush`; what is left gets a frame of its own. Safe to call
   * early (the scheduled run then finds less, or nothing, to do).
   */
  flush(): void {
    this.#pending = false;
    const queue = this.#queue;
    if (this.#head === queue.length) return;
    const deadline = this.#now() + this.#budgetMs();
    const batch: U[] = [];
    let i = this.#head;
    do {
      const prepared = this.#prepare(queue[i++]);
      if (prepared !== null) batch.push(prepared);
    } while (i < queue.length && this.#now() < deadline);
    if (i === queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else {
      this.#head = i;
      // Drop the taken prefix now and then, not on every frame: a slice per frame would copy the
      // whole backlog each time.
      if (i > 4096 && i * 2 > queue.length) {
        this.#queue = queue.slice(i);
        this.#head = 0;
      }
      this.#request();
    }
    if (batch.length) this.onFlush(batch);
  }

  get size(): number {
    return this.#queue.length - this.#head;
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
