// The one way tests wait: poll a condition until it holds. The timeout is a safety net that
// names what never happened, never a measurement (no test asserts how long a wait took).

export interface WaitOptions {
  /** What the test waits for, as the timeout's error message says it. */
  what: string;
  /** Safety net only; the default leaves a loaded machine plenty of room, and ends before a test's own 60 s timeout. */
  timeoutMs?: number;
  /** How often the condition is checked. */
  everyMs?: number;
}

/** Resolves with the condition's first truthy value; rejects naming `what` if none comes in time. */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitOptions): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const { what, timeoutMs = 50_000, everyMs = 25 } = opts;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as Exclude<T, false | null | undefined | 0 | ''>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
