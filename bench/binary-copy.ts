/** COPY's binary format for the benches' baselines (bench/timeseries.ts, bench/rollups.ts). */

/** PostgreSQL's epoch (binary timestamptz: microseconds since it), in Unix ms. */
const PG_EPOCH_MS = Date.UTC(2000, 0, 1);
/** The size of each buffer handed to COPY. */
const COPY_CHUNK = 64 * 1024;

export interface IngestRow {
  timestamp: string;
  value: number;
  sourceId: string;
  /** The row's item, when not the one given for all. */
  itemId?: string;
}

/**
 * The rows as COPY's binary format for the columns (tenant, item_id, ts, source_id, value), in
 * buffers of {@link COPY_CHUNK} bytes: the signature, no flags, no header extension; per row the
 * field count and each field as its length and bytes; -1 at the end.
 */
export function* binaryCopy(tenant: string, itemId: string, rows: IngestRow[]): Generator<Buffer> {
  const tenantBytes = Buffer.from(tenant, "utf8");
  const itemBytes = Buffer.from(itemId.replace(/-/g, ""), "hex");
  const items = new Map<string, Buffer>();
  // Every field but the source id, with the row's field count and the source id's length.
  const fixed = 2 + (4 + tenantBytes.length) + (4 + 16) + (4 + 8) + 4 + (4 + 8);
  let buf = Buffer.allocUnsafe(COPY_CHUNK);
  let at = buf.write("PGCOPY\n\xff\r\n\0", 0, "latin1");
  at = buf.writeInt32BE(0, at);
  at = buf.writeInt32BE(0, at);
  for (const row of rows) {
    if (at + fixed + 3 * row.sourceId.length > COPY_CHUNK) {
      yield buf.subarray(0, at);
      buf = Buffer.allocUnsafe(Math.max(COPY_CHUNK, fixed + 3 * row.sourceId.length));
      at = 0;
    }
    at = buf.writeInt16BE(5, at);
    at = buf.writeInt32BE(tenantBytes.length, at);
    at += tenantBytes.copy(buf, at);
    at = buf.writeInt32BE(16, at);
    let bytes: Buffer = itemBytes;
    if (row.itemId !== undefined) {
      bytes = items.get(row.itemId) ?? Buffer.from(row.itemId.replace(/-/g, ""), "hex");
      items.set(row.itemId, bytes);
    }
    at += bytes.copy(buf, at);
    const micros = (Date.parse(row.timestamp) - PG_EPOCH_MS) * 1000;
    const high = Math.floor(micros / 2 ** 32);
    at = buf.writeInt32BE(8, at);
    at = buf.writeInt32BE(high, at);
    at = buf.writeUInt32BE(micros - high * 2 ** 32, at);
    const length = buf.write(row.sourceId, at + 4, "utf8");
    at = buf.writeInt32BE(length, at) + length;
    at = buf.writeInt32BE(8, at);
    at = buf.writeDoubleBE(row.value, at);
  }
  const end = Buffer.alloc(2);
  end.writeInt16BE(-1);
  yield Buffer.concat([buf.subarray(0, at), end]);
}

