/**
 * SenML (RFC 8428), JSON form, read as events of one item. Base fields (`bn`, `bt`, `bu`, `bv`)
 * carry to the records after them until a record changes them. Each record becomes an event:
 *
 * - timestamp: `bt + t` seconds since the epoch; a sum below 2^28 is relative to the time of
 *   reading (RFC 8428 §4.5.3), as is a record with neither;
 * - value: `bv + v`, or `vb` as 1 (true) or 0 (false); a record with only `vs`, `vd` or `s` has
 *   no number and makes the pack unreadable (a dead letter);
 * - sourceId: the record's name, `bn + n`, when not empty: records of several sensors at one time
 *   stay apart, each under its name;
 * - keyValues.unit: the unit, `u` or else `bu`, when given.
 *
 * Records of a pack are checked afterwards as an upload's rows are (src/timeseries/events.ts).
 */

/** 2^28 s: a SenML time below this is relative to now. */
const RELATIVE_LIMIT_S = 2 ** 28;

const SENML_FIELDS = new Set(["bn", "bt", "bu", "bv", "bs", "bver", "n", "u", "v", "vs", "vb", "vd", "s", "t", "ut"]);

/** Whether `records` look like a SenML pack: every record an object with SenML fields only (no `timestamp`). */
export function isSenmlPack(records: unknown[]): boolean {
  return (
    records.length > 0 &&
    records.every((r) => r !== null && typeof r === "object" && !Array.isArray(r) && Object.keys(r).length > 0 && Object.keys(r).every((k) => SENML_FIELDS.has(k)))
  );
}

/** The events of a SenML pack (raw rows, as an upload's), or why the pack cannot be read. */
export function senmlRows(records: unknown[], nowMs: number): { rows: Record<string, unknown>[] } | { reason: string } {
  let baseName = "";
  let baseTime = 0;
  let baseUnit: string | undefined;
  let baseValue = 0;
  const rows: Record<string, unknown>[] = [];
  for (let k = 0; k < records.length; k++) {
    const r = records[k];
    const at = `senml[${k}]`;
    if (r === null || typeof r !== "object" || Array.isArray(r)) return { reason: `${at}: a SenML record must be an object` };
    const record = r as Record<string, unknown>;
    const unknown = Object.keys(record).find((key) => !SENML_FIELDS.has(key));
    if (unknown !== undefined) return { reason: `${at}: ${unknown} is not a SenML field (RFC 8428)` };
    for (const [key, kind] of [["bn", "string"], ["bu", "string"], ["n", "string"], ["u", "string"], ["bt", "number"], ["t", "number"], ["bv", "number"], ["v", "number"], ["vb", "boolean"]] as const) {
      if (record[key] !== undefined && typeof record[key] !== kind) return { reason: `${at}.${key} must be a ${kind}` };
    }
    if (record.bn !== undefined) baseName = record.bn as string;
    if (record.bt !== undefined) baseTime = record.bt as number;
    if (record.bu !== undefined) baseUnit = record.bu as string;
    if (record.bv !== undefined) baseValue = record.bv as number;
    const hasValue = record.v !== undefined || record.vb !== undefined || record.vs !== undefined || record.vd !== undefined || record.s !== undefined;
    // A record of base fields only sets them for the records after it.
    if (!hasValue && record.n === undefined && record.t === undefined && record.u === undefined) continue;
    let value: number;
    if (record.v !== undefined) value = baseValue + (record.v as number);
    else if (record.vb !== undefined) value = record.vb === true ? 1 : 0;
    else return { reason: `${at}: the record has no numeric value (v or vb); an event's value is a number` };
    const seconds = baseTime + ((record.t as number | undefined) ?? 0);
    const ms = Math.round((seconds < RELATIVE_LIMIT_S ? nowMs / 1000 + seconds : seconds) * 1000);
    if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return { reason: `${at}: the time ${seconds} is not a representable instant` };
    const name = baseName + ((record.n as string | undefined) ?? "");
    const unit = (record.u as string | undefined) ?? baseUnit;
    const row: Record<string, unknown> = { timestamp: new Date(ms).toISOString(), value };
    if (name !== "") row.sourceId = name;
    if (unit !== undefined) row.keyValues = { unit };
    rows.push(row);
  }
  if (rows.length === 0) return { reason: "the SenML pack holds no record with a value" };
  return { rows };
}
