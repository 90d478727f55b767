// A TCP proxy between one process and PostgreSQL, so a test can cut that process's connections
// (all of them, at once) and decide when its new ones get through.
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export class TcpProxy {
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private held: (() => void)[] | null = null;
  /** Connections cut so far. */
  cut = 0;

  private constructor(private readonly server: net.Server) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const server = net.createServer((client) => proxy.accept(client, target));
    const proxy = new TcpProxy(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** `url` with its host and port replaced by this proxy's. */
  route(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  private accept(client: net.Socket, target: { host: string; port: number }): void {
    client.on('error', () => {});
    const connect = () => {
      if (client.destroyed) return;
      const upstream = net.connect(target.port, target.host);
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      const pair: [net.Socket, net.Socket] = [client, upstream];
      this.pairs.add(pair);
      const drop = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('close', drop);
      upstream.on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    };
    // While held, a new connection is accepted but goes nowhere until release().
    if (this.held) this.held.push(connect);
    else connect();
  }

  /** Drops every open connection at once, both ends; new ones wait until release(). */
  dropAllAndHold(): void {
    this.held = [];
    for (const [client, upstream] of this.pairs) {
      this.cut++;
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Lets held connections (and new ones) through. */
  release(): void {
    const waiting = this.held ?? [];
    this.held = null;
    for (const connect of waiting) connect();
  }

  async close(): Promise<void> {
    this.release();
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
