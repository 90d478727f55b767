// The queue-history rollup as a periodic task. Workers and servers all run it; the rollup's
// advisory try-lock lets one of them work at a time and the others skip cheaply.
import { DEFAULTS } from './defaults.ts';
import { Every } from './every.ts';
import type { Logger } from './log.ts';
import type { MaintainService } from './services/maintain.ts';

export function historyRollup(history: Pick<MaintainService, 'rollupHistory'>, log: Logger, everyMs: number = DEFAULTS.historyEveryMs): Every {
  return new Every(everyMs, async () => {
    try {
      const n = await history.rollupHistory();
      if (n) log.debug({ events: n }, 'rolled up queue history');
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'queue history rollup failed');
    }
  });
}
