// SSE clients for the stream benches, run as their own process so that neither the server nor
// the process that times the POSTs shares an event loop with them. Each client is a raw TCP
// socket with a hand-written GET: per chunk it finds the frames' job ids with indexOf, and the
// arrival time is taken before that (process.hrtime, the system's monotonic clock, which the
// parent process reads too). A parent drives it over IPC:
//   → {url, clients, first?}  ← {ready: true} once every stream has answered 200 (`first`: each
//                        client reports only a job's first frame, its `enqueued` event)
//   → {report: true}     ← {arrivals: [[jobId, ns], ...] since the last report, received: frames per client so far}
//   → {close: true}      (the process ends its sockets and exits)
import net from 'node:net';

interface Start {
  url: string;
  clients: number;
  first?: boolean;
}

const FRAME_END = Buffer.from('\n\n');
const JOB_ID = Buffer.from('"jobId":"');

const arrivals: [string, string][] = [];
const sockets: net.Socket[] = [];
const received: number[] = [];

function connect(url: URL, index: number, first: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    sockets.push(socket);
    received[index] = 0;
    let headers = true;
    let carry: Buffer | null = null;
    const seen = first ? new Set<string>() : undefined;
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(`GET /api/events HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`));
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      const at = process.hrtime.bigint().toString();
      if (headers) {
        if (!chunk.subarray(0, 16).toString('latin1').startsWith('HTTP/1.1 200')) return reject(new Error(`stream answered ${chunk.subarray(0, 40).toString()}`));
        headers = false;
        resolve();
      }
      // Only whole frames are read; a frame cut between two chunks waits for its end.
      let buf = carry ? Buffer.concat([carry, chunk]) : chunk;
      const end = buf.lastIndexOf(FRAME_END);
      carry = end < 0 ? buf : end + 2 < buf.length ? Buffer.from(buf.subarray(end + 2)) : null;
      if (end < 0) return;
      buf = buf.subarray(0, end + 2);
      for (let i = buf.indexOf(JOB_ID); i >= 0; i = buf.indexOf(JOB_ID, i + 1)) {
        const from = i + JOB_ID.length;
        const id = buf.toString('latin1', from, buf.indexOf(34, from));
        if (seen?.has(id)) continue;
        seen?.add(id);
        arrivals.push([id, at]);
        received[index]++;
      }
    });
  });
}

process.on('message', (m: Partial<Start> & { report?: boolean; close?: boolean }) => {
  if (m.url && m.clients) {
    const url = new URL(m.url);
    const n = m.clients;
    void (async () => {
      // 50 at a time: a thousand connects at once would overflow the listen backlog.
      for (let i = 0; i < n; i += 50) {
        await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, k) => connect(url, i + k, m.first === true)));
      }
      process.send!({ ready: true });
    })().catch((err: Error) => process.send!({ error: err.message }));
  } else if (m.report) {
    process.send!({ arrivals: arrivals.splice(0), received });
  } else if (m.close) {
    for (const s of sockets) s.destroy();
    process.disconnect();
  }
});
