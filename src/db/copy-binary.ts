/**
 * COPY's binary format (PostgreSQL's documentation, "COPY", "Binary Format"), written field by
 * field into buffers of about {@link CHUNK} bytes: the signature, no flags, no header extension;
 * per row its field count, then each field as its length and bytes (−1 for NULL); −1 at the end.
 * The server reads each field with the type's binary input, without parsing text: for the events'
 * uuid, timestamptz and float8 columns that is cheaper on both sides than CSV.
 */

/** The size of each buffer handed to COPY. */
const CHUNK = 64 * 1024;
/** PostgreSQL's epoch, 2000-01-01T00:00:00Z, in Unix ms: a binary timestamptz counts microseconds from it. */
const PG_EPOCH_MS = Date.UTC(2000, 0, 1);
const TWO_32 = 2 ** 32;
/** The type oid of `text`, named by a binary `text[]`. */
const TEXT_OID = 25;
/** The first byte of a binary jsonb: the version of its format, followed by the JSON text. */
const JSONB_VERSION = 1;

export class BinaryCopyWriter {
  private buffer = Buffer.allocUnsafe(CHUNK);
  private at = 0;
  private readonly full: Buffer[] = [];

  constructor() {
    this.at = this.buffer.write("PGCOPY\n\xff\r\n\0", 0, "latin1");
    this.at = this.buffer.writeInt32BE(0, this.at);
    this.at = this.buffer.writeInt32BE(0, this.at);
  }

  /** Whether a buffer is full, to be handed over by {@link take}. */
  get filled(): boolean {
    return this.full.length > 0;
  }

  /** The buffers filled so far, handed over (each about {@link CHUNK} bytes). */
  take(): Buffer[] {
    return this.full.splice(0);
  }

  /** Ends the data: the buffers not handed over yet, the last one with the trailer. */
  end(): Buffer[] {
    this.room(2);
    this.at = this.buffer.writeInt16BE(-1, this.at);
    this.full.push(this.buffer.subarray(0, this.at));
    return this.take();
  }

  null(): void {
    this.room(4);
    this.at = this.buffer.writeInt32BE(-1, this.at);
  }

  /** A field already encoded (a text's UTF-8 bytes, a uuid's 16 bytes). */
  bytes(value: Buffer): void {
    this.room(4 + value.length);
    this.at = this.buffer.writeInt32BE(value.length, this.at);
    this.at = put(this.buffer, this.at, value);
  }

  /** Bytes as they are: fields encoded once for many rows (see {@link field}), a row's field count with them. */
  raw(value: Buffer): void {
    this.room(value.length);
    this.at = put(this.buffer, this.at, value);
  }

  /** `text` (well-formed: the ingest path refuses lone surrogates and NUL before). */
  text(value: string): void {
    this.room(4 + 3 * value.length);
    const length = value === "" ? 0 : this.buffer.write(value, this.at + 4, "utf8");
    this.at = this.buffer.writeInt32BE(length, this.at) + length;
  }

  float8(value: number): void {
    this.room(12);
    this.at = this.buffer.writeInt32BE(8, this.at);
    this.at = this.buffer.writeDoubleBE(value, this.at);
  }

  /**
   * `timestamptz` from Unix ms: microseconds since {@link PG_EPOCH_MS} as a 64-bit integer. The
   * microseconds of the years 1000–9999 pass 2^53, so they are never formed as one double: the
   * milliseconds are cut at 2^32, each part times 1000 stays exact.
   */
  timestamptz(unixMs: number): void {
    this.room(12);
    const ms = unixMs - PG_EPOCH_MS;
    const high = Math.floor(ms / TWO_32);
    const lowMicros = (ms - high * TWO_32) * 1000;
    const carry = Math.floor(lowMicros / TWO_32);
    this.at = this.buffer.writeInt32BE(8, this.at);
    this.at = this.buffer.writeInt32BE(high * 1000 + carry, this.at);
    this.at = this.buffer.writeUInt32BE(lowMicros - carry * TWO_32, this.at);
  }

  /** `text[]`: one dimension from 1 (none when empty), no NULL element. */
  textArray(values: string[]): void {
    let room = 24;
    for (const v of values) room += 4 + 3 * v.length;
    this.room(room);
    const start = this.at;
    this.at += 4;
    this.at = this.buffer.writeInt32BE(values.length === 0 ? 0 : 1, this.at);
    this.at = this.buffer.writeInt32BE(0, this.at);
    this.at = this.buffer.writeInt32BE(TEXT_OID, this.at);
    if (values.length > 0) {
      this.at = this.buffer.writeInt32BE(values.length, this.at);
      this.at = this.buffer.writeInt32BE(1, this.at);
      for (const v of values) {
        const length = this.buffer.write(v, this.at + 4, "utf8");
        this.at = this.buffer.writeInt32BE(length, this.at) + length;
      }
    }
    this.buffer.writeInt32BE(this.at - start - 4, start);
  }

  /** `jsonb` of a JSON text. */
  jsonb(json: string): void {
    this.room(5 + 3 * json.length);
    const length = this.buffer.write(json, this.at + 5, "utf8");
    this.at = this.buffer.writeInt32BE(length + 1, this.at);
    this.at = this.buffer.writeUInt8(JSONB_VERSION, this.at) + length;
  }

  /** Makes room for `bytes` more: a full buffer is set aside, the next one large enough. */
  private room(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return;
    this.full.push(this.buffer.subarray(0, this.at));
    this.buffer = Buffer.allocUnsafe(Math.max(CHUNK, bytes));
    this.at = 0;
  }
}

/** Copies `bytes` into `buffer` at `at`; answers the offset past them. A short run is copied here: a native copy costs more to call. */
function put(buffer: Buffer, at: number, bytes: Buffer): number {
  if (bytes.length > 64) return at + bytes.copy(buffer, at);
  for (let k = 0; k < bytes.length; k++) buffer[at + k] = bytes[k]!;
  return at + bytes.length;
}

/** A field as written for {@link BinaryCopyWriter.raw}: its length, then its bytes. */
export function field(bytes: Buffer): Buffer {
  const out = Buffer.allocUnsafe(4 + bytes.length);
  out.writeInt32BE(bytes.length, 0);
  bytes.copy(out, 4);
  return out;
}

/** A uuid's 16 bytes, from its text (the 36-character form, already checked). */
export function uuidBytes(uuid: string): Buffer {
  return Buffer.from(uuid.replace(/-/g, ""), "hex");
}
