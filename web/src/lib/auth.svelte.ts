// The API token: kept in sessionStorage (per tab, gone when the tab closes), asked for when
// any call answers 401.

const KEY = 'herald.token';

function readToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

class AuthState {
  token = $state<string | null>(readToken());
  /** True after a 401: the token prompt opens and stays until a token is given. */
  required = $state(false);
  /** The server's words for the last 401 ("token required", "unknown token"…). */
  reason = $state<string | null>(null);
  /** The server took the current token (a call with it succeeded); false until then. */
  accepted = $state(false);
  /** The prompt opened by hand from the header. */
  promptOpen = $state(false);
  /** Bumps on every token change; views re-load when it changes. */
  version = $state(0);
  #listeners = new Set<() => void>();

  demand(reason: string): void {
    this.required = true;
    this.accepted = false;
    this.reason = reason;
  }

  /** A call that needs a token succeeded: the token in use (if any) is a good one. */
  accept(): void {
    if (this.token && !this.required && !this.accepted) this.accepted = true;
  }

  setToken(value: string | null): void {
    const t = value?.trim() || null;
    try {
      if (t) sessionStorage.setItem(KEY, t);
      else sessionStorage.removeItem(KEY);
    } catch {
      // storage may be disabled; the token then lives for this page only
    }
    this.token = t;
    this.accepted = false;
    this.required = false;
    this.reason = null;
    this.promptOpen = false;
    this.version += 1;
    for (const fn of this.#listeners) fn();
  }

  onChange(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}

export const auth = new AuthState();
