// Duplicate guard. The server sends every event exactly once per cursor, but a hand-made
// reconnect can overlap with what the browser already delivered; a bounded set makes that harmless.

export class RecentIds {
  // Two generations instead of one insertion-ordered Set: evicting a Set's oldest entry over and
  // over is slow in V8 (iteration skips the deleted slots), and this runs for every event.
  #current = new Set<string>();
  #previous = new Set<string>();
  constructor(private readonly cap = 20_000) {}

  /** True when the id is new (and remembers it), false for a duplicate. Remembers at least the last cap/2. */
  add(id: string): boolean {
    if (this.#current.has(id) || this.#previous.has(id)) return false;
    this.#current.add(id);
    if (this.#current.size >= this.cap / 2) {
      this.#previous = this.#current;
      this.#current = new Set();
    }
    return true;
  }
}
