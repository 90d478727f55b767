// At most one run per `ms`, and always one run after the last call (trailing), so the final
// state is never missed. An async run in flight is never overlapped: calls during it are
// folded into one follow-up run.

export interface Throttled {
  (): void;
  /** Runs now (still never overlapping a run in flight). */
  now(): void;
  cancel(): void;
}

export function throttle(fn: () => unknown, ms: number): Throttled {
  let last = -Infinity;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running = false;
  let again = false;
  let cancelled = false;

  const run = async () => {
    timer = null;
    running = true;
    again = false;
    last = Date.now();
    try {
      await fn();
    } catch {
      // the caller's fn reports its own errors; a throw must not wedge the throttle
    } finally {
      running = false;
      if (again && !cancelled) call();
    }
  };

  const call = (() => {
    cancelled = false;
    if (running) {
      again = true;
      return;
    }
    if (timer) return;
    const wait = last + ms - Date.now();
    if (wait <= 0) void run();
    else timer = setTimeout(() => void run(), wait);
  }) as Throttled;

  call.now = () => {
    cancelled = false;
    if (running) {
      again = true;
      return;
    }
    if (timer) clearTimeout(timer);
    void run();
  };

  call.cancel = () => {
    cancelled = true;
    if (timer) clearTimeout(timer);
    timer = null;
    again = false;
  };

  return call;
}
