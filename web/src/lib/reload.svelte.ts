// A list a page re-reads from the API (workers, schedules): at once, after a new token or a
// stream resync; at most once a second when the stream brings events that may change it; and on
// a slow poll as a safety net (which also notices what sends no event, like a worker dying).
// Call it while a component initialises: its effects live as long as the component.
import { auth } from './auth.svelte';
import { board } from './store.svelte';
import { throttle, type Throttled } from './throttle';
import type { BoardEvent } from './types';

export function reloadOn(load: () => Promise<unknown>, changes: (batch: BoardEvent[]) => boolean, pollMs = 10_000): Throttled {
  const refresh = throttle(load, 1000);
  $effect(() => {
    void [auth.version, board.resyncs]; // the dependencies
    refresh.now();
  });
  $effect(() =>
    board.onBatch((batch) => {
      if (changes(batch)) refresh();
    }),
  );
  $effect(() => {
    const t = setInterval(refresh, pollMs);
    return () => {
      clearInterval(t);
      refresh.cancel();
    };
  });
  return refresh;
}
