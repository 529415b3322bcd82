import type { WebSocket } from "ws";
import type { Subscriber } from "../streams/hub.js";

/** Close codes of a stream (contract §10; docs/reference/streams.md). */
export const CLOSE = {
  goingAway: 1001,
  internal: 1011,
  badRequest: 4400,
  unauthenticated: 4401,
  forbidden: 4403,
  unknownItem: 4404,
  tooSlow: 4408,
} as const;

/** The reason a stream is closed with (4401) when its token's `exp` plus the clock skew has passed. */
export const TOKEN_EXPIRED = "the token has expired; send a new auth message before exp to stay subscribed";

/** The longest delay a Node timer takes (about 24.8 days); a later deadline is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A close reason is at most 123 bytes (RFC 6455); longer ones are cut. */
export function closeReason(text: string): string {
  let reason = text;
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -1);
  return reason;
}

/**
 * One subscriber's WebSocket. Messages go straight to the socket; what the socket has not yet
 * sent (`bufferedAmount`) is bounded by `bufferBytes`: a subscriber that reads too slowly to stay
 * under it is dropped with close code 4408 rather than let memory grow. A socket that does not
 * complete the close handshake within `graceMs` is ended.
 *
 * While `held` (a resume sends the stored events first), live messages wait in order under the
 * same bound.
 *
 * A stream lives no longer than its token ({@link expireAt}): it is closed with 4401 when the
 * token's `exp` plus the clock skew passes, unless a new token moved the deadline first.
 */
export class StreamConnection implements Subscriber {
  private held: string[] | undefined;
  private heldBytes = 0;
  private ended = false;
  private expiry: NodeJS.Timeout | undefined;
  /** Set by the ping round; cleared when a pong comes back. */
  awaitingPong = false;

  constructor(
    readonly socket: WebSocket,
    private readonly bufferBytes: number,
    private readonly graceMs: number,
    private readonly onDrop: (reason: string) => void,
  ) {
    socket.on("pong", () => {
      this.awaitingPong = false;
    });
    socket.once("close", () => clearTimeout(this.expiry));
  }

  get open(): boolean {
    return !this.ended && this.socket.readyState === this.socket.OPEN;
  }

  /** Checks the bound before the socket frames anything: a subscriber at it is dropped, not written to. */
  send(text: string, bytes = Buffer.byteLength(text)): void {
    if (!this.open) return;
    if (this.held !== undefined) {
      if (this.heldBytes + bytes > this.bufferBytes) return this.drop();
      this.held.push(text);
      this.heldBytes += bytes;
      return;
    }
    if (this.socket.bufferedAmount + bytes > this.bufferBytes) return this.drop();
    this.socket.send(text);
  }

  /** Live messages wait until {@link release}. */
  hold(): void {
    this.held ??= [];
  }

  /** Sends the messages held, then live ones as they come. */
  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    this.heldBytes = 0;
    for (const text of held) this.send(text);
  }

  /**
   * Sends a stored event of a resume, waiting while the socket holds more than half the bound: the
   * history is read at the subscriber's pace. False once the connection has closed.
   */
  async sendPaced(text: string): Promise<boolean> {
    while (this.open && this.socket.bufferedAmount > this.bufferBytes / 2) await new Promise((resolve) => setTimeout(resolve, 10));
    if (!this.open) return false;
    this.socket.send(text);
    return true;
  }

  /**
   * Closes the stream with 4401 once `untilMs` (epoch ms: the token's `exp` plus the clock skew)
   * has passed; undefined (auth disabled) sets no deadline. A later call replaces the deadline.
   */
  expireAt(untilMs: number | undefined): void {
    clearTimeout(this.expiry);
    this.expiry = undefined;
    if (untilMs === undefined || this.ended) return;
    const wait = untilMs - Date.now();
    if (wait <= 0) return this.close(CLOSE.unauthenticated, TOKEN_EXPIRED);
    this.expiry = setTimeout(() => this.expireAt(untilMs), Math.min(wait, MAX_TIMER_MS));
    this.expiry.unref();
  }

  /** Closes with a code and reason; the socket is ended if the peer does not answer within the grace. */
  close(code: number, reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.held = undefined;
    clearTimeout(this.expiry);
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING) this.socket.close(code, closeReason(reason));
    const timer = setTimeout(() => this.socket.terminate(), this.graceMs);
    timer.unref();
    this.socket.once("close", () => clearTimeout(timer));
  }

  private drop(): void {
    const reason = `too slow: more than ${this.bufferBytes} bytes unread (STREAM_BUFFER_BYTES)`;
    this.close(CLOSE.tooSlow, reason);
    this.onDrop(reason);
  }
}
