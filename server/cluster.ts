// HERALD_STREAM_PROCESSES > 1: `herald server` as several processes sharing one port (node:cluster).
// Fan-out to SSE clients costs one socket write per client per event, nearly all of it the
// kernel's send, and one process does them all on one thread; N processes each write to their own
// share of the sockets, on as many cores. Each child is a whole server (its own tailer, LISTEN and
// pool), the same as N servers behind a load balancer: exactly-once, order, filters and resets
// hold per stream, and a Last-Event-ID resume works on any child (replay from the database, then
// live with no gap). The primary starts the database and migrations and starts a new child when
// one dies (its clients resume on another); the children accept from the one shared socket, so
// the kernel decides which child takes each connection.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '../queue/log.ts';

/** A child that dies is replaced after this pause (a crash loop then costs little). */
const RESTART_AFTER_MS = 500;

/** True in a child process of a multi-process server. */
export const isStreamChild = (): boolean => cluster.isWorker;

/** Each child's cap, so that the processes together keep to HERALD_MAX_STREAMS. */
export const childMaxStreams = (maxStreams: number, processes: number): number => Math.max(1, Math.ceil(maxStreams / processes));

/** In a child: tells the primary the server listens. */
export function childListening(url: string): void {
  process.send?.({ heraldListening: url });
}

export interface StreamCluster {
  url: string;
  /** SIGTERM to every child (each closes its streams and pool), resolved when all have exited. */
  stop(): Promise<void>;
}

/**
 * Forks `processes` children running this same command (they skip the database start, see
 * bin/program.ts) with `env` added, and resolves once all of them listen.
 */
export function startStreamCluster(processes: number, env: Record<string, string>, log: Logger): Promise<StreamCluster> {
  // Each child accepts from the shared listening socket itself. (Round robin through the primary
  // can hand a connection to a child that has just died, and that client then hangs unanswered.)
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  let stopping = false;
  const live = new Set<Worker>();
  const fork = (): Worker => {
    const w = cluster.fork(env);
    live.add(w);
    log.info({ child: w.process.pid }, 'stream process started');
    return w;
  };
  return new Promise((resolve, reject) => {
    let url: string | undefined;
    let waiting = processes;
    cluster.on('message', (w, m: { heraldListening?: string }) => {
      if (typeof m?.heraldListening !== 'string') return;
      log.debug({ child: w.process.pid }, 'stream process listening');
      if (url !== undefined) return;
      if (--waiting === 0) {
        url = m.heraldListening;
        resolve({ url, stop });
      }
    });
    cluster.on('exit', (w, code, signal) => {
      live.delete(w);
      if (stopping) return;
      // One that never listened is a failed start (bad port, database down): give up rather than loop.
      if (url === undefined) {
        stopping = true;
        for (const o of live) o.process.kill('SIGTERM');
        reject(new Error(`a stream process exited during start (${code ?? signal}); its log says why`));
        return;
      }
      log.warn({ child: w.process.pid, code, signal }, 'stream process died; starting another (its clients resume with Last-Event-ID)');
      setTimeout(() => !stopping && fork(), RESTART_AFTER_MS).unref();
    });
    for (let i = 0; i < processes; i++) fork();
  });

  async function stop(): Promise<void> {
    stopping = true;
    await Promise.all(
      [...live].map(
        (w) =>
          new Promise<void>((done) => {
            if (w.isDead()) return done();
            w.once('exit', () => done());
            w.process.kill('SIGTERM');
          }),
      ),
    );
  }
}
