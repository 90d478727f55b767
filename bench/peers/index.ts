// All comparison peers, by name, for the bench runner and run-peer.ts.
import bullmq from './bullmq.ts';
import graphile from './graphile.ts';
import graphileBatched from './graphile-batched.ts';
import pgboss from './pgboss.ts';
import sql from './sql.ts';
import type { PeerRunner } from './types.ts';

export const peers: readonly PeerRunner[] = [graphile, graphileBatched, pgboss, bullmq, sql];

export function peerByName(name: string): PeerRunner | undefined {
  return peers.find((p) => p.name === name);
}

export type { PeerRunner } from './types.ts';
