// A TCP proxy between one process and PostgreSQL, so a test can cut that process's connections
// and decide when its new ones get through: all of them at once, both ends (a blip the server
// sees too), or only the process's end (half-open: a NAT or firewall reset, after which the old
// backends live on, holding their locks, until the test ends them).
import net from 'node:net';
import type { AddressInfo } from 'node:net';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  /** The client's end was cut alone: closing it must not end the server's. */
  halfOpen?: boolean;
}

export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  /** Server ends whose client end was cut (cutClientSide): still open, nothing forwarded. */
  private readonly lingering = new Set<net.Socket>();
  private held: (() => void)[] | null = null;
  private refusing = false;
  /** Connections cut so far. */
  cut = 0;
  /** Connections that went through to PostgreSQL so far. */
  passed = 0;

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

  /** Connections accepted and held (dropAllAndHold) now, waiting for release(). */
  get waiting(): number {
    return this.held?.length ?? 0;
  }

  /** Connections open through the proxy now. */
  get open(): number {
    return this.pairs.size;
  }

  private accept(client: net.Socket, target: { host: string; port: number }): void {
    client.on('error', () => {});
    if (this.refusing) {
      client.destroy();
      return;
    }
    const connect = () => {
      if (client.destroyed) return;
      const upstream = net.connect(target.port, target.host);
      const pair: Pair = { client, upstream };
      this.passed++;
      upstream.on('error', () => client.destroy());
      client.on('error', () => {
        if (!pair.halfOpen) upstream.destroy();
      });
      this.pairs.add(pair);
      const drop = () => {
        this.pairs.delete(pair);
        client.destroy();
        if (!pair.halfOpen) upstream.destroy();
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
    for (const { client, upstream } of this.pairs) {
      this.cut++;
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /**
   * Resets the client's end of every open connection and stops forwarding, but keeps the
   * server's end open: its backend lives on (with its locks) until endServerSides(). New
   * connections go through as usual.
   */
  cutClientSide(): void {
    for (const pair of this.pairs) {
      this.cut++;
      pair.halfOpen = true;
      pair.client.unpipe(pair.upstream);
      pair.upstream.unpipe(pair.client);
      // Whatever the backend still sends is read and dropped, so it never blocks on a full buffer.
      pair.upstream.on('data', () => {});
      this.lingering.add(pair.upstream);
      pair.upstream.on('close', () => this.lingering.delete(pair.upstream));
      pair.client.resetAndDestroy();
    }
    this.pairs.clear();
  }

  /** Server ends left open by cutClientSide(). */
  get lingeringCount(): number {
    return this.lingering.size;
  }

  /** Closes the server ends cutClientSide() left open: their backends end now. */
  endServerSides(): void {
    for (const s of this.lingering) s.destroy();
    this.lingering.clear();
  }

  /** New connections are closed at once, like a database that is down, until release(). */
  refuseNew(): void {
    this.refusing = true;
  }

  /** Lets held connections (and new ones) through. */
  release(): void {
    const waiting = this.held ?? [];
    this.held = null;
    this.refusing = false;
    for (const connect of waiting) connect();
  }

  async close(): Promise<void> {
    this.release();
    this.endServerSides();
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
