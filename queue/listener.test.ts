// The listener's start: a process that could not LISTEN when it started (its database down, or a
// probe not answered on a loaded boot) polls meanwhile, and listens as soon as it can.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { watchLog } from '../test/support/log-watch.ts';
import { TcpProxy } from '../test/support/tcp-proxy.ts';
import { waitFor } from '../test/support/wait.ts';
import { Listener } from './listener.ts';

const db = useTestDatabase();
const CHANNEL = 'listener_test';
let proxy: TcpProxy;
beforeAll(async () => {
  const u = new URL(db.url);
  proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port || 5432) });
});
afterAll(() => proxy.close());

function listener(log = watchLog()): Listener {
  return new Listener({ url: proxy.route(db.url), channels: [CHANNEL], probePool: db.pool, logger: log.logger });
}

// Mutation caught: `this.reconnect(1);` removed from start() (the process then polled for good).
it('polls while its database refuses it at start, then listens once it answers', async () => {
  proxy.refuseNew();
  const log = watchLog();
  const l = listener(log);
  const heard: string[] = [];
  l.on('notification', (_channel, payload) => heard.push(payload));
  try {
    expect(await l.start()).toBe(false);
    expect(l.state).toBe('polling');
    await log.line('cannot LISTEN');
    proxy.release();
    await waitFor(() => l.state === 'up', { what: 'the listener to connect after its failed start' });
    await log.line('polling no longer needed');
    await db.pool.query(`NOTIFY ${CHANNEL}, 'after'`);
    await waitFor(() => heard.includes('after'), { what: 'the notification sent after it connected' });
    expect(log.lines().filter((line) => String(line.msg).startsWith('cannot LISTEN'))).toHaveLength(1);
  } finally {
    await l.close();
    proxy.release();
  }
});

// Mutation caught: the `if (this.closed)` block after connecting removed (the attempt then kept
// its session, and a stopped process its connection).
it('a close while an attempt is connecting leaves no session behind', async () => {
  proxy.refuseNew();
  const l = listener();
  try {
    expect(await l.start()).toBe(false);
    proxy.release();
    proxy.dropAllAndHold();
    await waitFor(() => proxy.waiting === 1, { what: 'the next attempt to reach the proxy' });
    const passed = proxy.passed;
    await l.close();
    proxy.release();
    await waitFor(() => proxy.passed === passed + 1 && proxy.open === 0, { what: 'the attempt to connect through and end' });
    expect(l.state).toBe('polling');
  } finally {
    await l.close();
    proxy.release();
  }
});
