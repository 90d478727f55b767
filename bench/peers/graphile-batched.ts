// graphile-worker@0.18 with its batching features on: jobs are fetched 500 at a time into a
// local queue, and completions/failures are coalesced per event-loop tick (delay 0).
import { makeGraphilePeer } from './graphile.ts';

export default makeGraphilePeer('graphile_batched', {
  localQueue: { size: 500 },
  completeJobBatchDelay: 0,
  failJobBatchDelay: 0,
});
