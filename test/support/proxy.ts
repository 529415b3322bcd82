import { connect, createServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type TlsOptions } from "node:tls";
import { freePort } from "./process.js";

/**
 * A TCP relay in front of an engine, to take its connection away and give it back: `cut()` closes
 * every connection and stops listening (the port refuses connections, as for an engine that went
 * down), `restore()` listens again on the same port. `muteReplies()` keeps the connections open but
 * drops what the target sends, as for a server that stopped answering.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  /** Connections accepted so far. */
  accepted = 0;
  private muted = false;

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
    private readonly tls: TlsOptions | undefined,
  ) {}

  /** A relay to `target` (`host:port` or a URL); with `tls`, it terminates TLS in front of a plaintext target. */
  static async start(target: string, tls?: TlsOptions): Promise<TcpProxy> {
    const url = new URL(target.includes("://") ? target : `tcp://${target}`);
    const proxy = new TcpProxy(await freePort(), { host: url.hostname, port: Number(url.port) }, tls);
    await proxy.restore();
    return proxy;
  }

  /** `target` with its host:port replaced by the proxy's. */
  through(target: string): string {
    const url = new URL(target.includes("://") ? target : `tcp://${target}`);
    const replaced = `127.0.0.1:${this.port}`;
    return target.includes("://") ? target.replace(url.host, replaced) : replaced;
  }

  restore(): Promise<void> {
    const relay = (client: Socket) => {
      this.accepted++;
      const upstream = connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
        socket.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.on("data", (chunk: Buffer) => {
        if (!this.muted) client.write(chunk);
      });
    };
    const server = this.tls === undefined ? createServer(relay) : createTlsServer(this.tls, relay);
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
  }

  /** From now on, what the target sends is dropped (until `unmute()`); the connections stay open. */
  muteReplies(): void {
    this.muted = true;
  }

  unmute(): void {
    this.muted = false;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
