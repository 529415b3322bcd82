import type { Knex } from "knex";

/**
 * The history of API and Calculation Definitions (migration 009): each change appended in the
 * change's own transaction, numbered per (tenant, kind, externalId) from 1. Kept after a delete.
 */
export type DefinitionKind = "api" | "calculation";

export const HISTORY_ACTIONS = ["baseline", "create", "update", "activate", "deactivate", "delete", "restore", "rename"] as const;
export type HistoryAction = (typeof HISTORY_ACTIONS)[number];

/** Who made a change: the token's user claim and its `name` claim, each null when the token has none. */
export interface Actor {
  userId?: string | undefined;
  name?: string | undefined;
}

/** What a history entry says besides its record: the version a restore brought back, the other name of a rename. */
export interface HistoryDetail {
  restoredFrom?: number;
  renamedFrom?: string;
  renamedTo?: string;
}

export interface HistoryEntry<R> extends HistoryDetail {
  version: number;
  action: HistoryAction;
  changedBy: { userId: string | null; name: string | null };
  changedAt: string;
  /** The definition after the change; for a delete (and a rename away), the definition as it was removed. */
  record: R;
}

interface Row {
  version: number;
  action: HistoryAction;
  record: unknown;
  detail: HistoryDetail | null;
  user_id: string | null;
  user_name: string | null;
  changed_at: Date;
}

const COLUMNS = ["version", "action", "record", "detail", "user_id", "user_name", "changed_at"];

function toEntry<R>(row: Row): HistoryEntry<R> {
  return {
    version: row.version,
    action: row.action,
    changedBy: { userId: row.user_id, name: row.user_name },
    changedAt: row.changed_at.toISOString(),
    ...(row.detail ?? {}),
    record: row.record as R,
  };
}

/**
 * Appends one change: its version is one past the definition's last, read in the same statement.
 * Writers of one definition take turns on its row (an update or delete locks it, an insert waits
 * on the unique externalId), so each reads the version the one before it committed.
 */
export async function recordChange(
  trx: Knex.Transaction,
  tenant: string,
  kind: DefinitionKind,
  change: { externalId: string; action: HistoryAction; record: object; actor?: Actor | undefined; detail?: HistoryDetail | undefined },
): Promise<number> {
  const detail = change.detail === undefined || Object.keys(change.detail).length === 0 ? null : JSON.stringify(change.detail);
  const { rows } = (await trx.raw(
    `insert into definition_history (tenant, kind, external_id, version, action, record, detail, user_id, user_name, changed_at)
     select ?, ?, ?, coalesce(max(version), 0) + 1, ?, ?::jsonb, ?::jsonb, ?, ?, date_trunc('milliseconds', clock_timestamp())
       from definition_history where tenant = ? and kind = ? and external_id = ?
     returning version`,
    [tenant, kind, change.externalId, change.action, JSON.stringify(change.record), detail, change.actor?.userId ?? null, change.actor?.name ?? null, tenant, kind, change.externalId],
  )) as { rows: { version: number }[] };
  return rows[0]!.version;
}

/** A definition's history, newest first; empty when it has none. */
export async function listHistory<R>(knex: Knex, tenant: string, kind: DefinitionKind, externalId: string): Promise<HistoryEntry<R>[]> {
  const rows = (await knex("definition_history").where({ tenant, kind, external_id: externalId }).orderBy("version", "desc").select(COLUMNS)) as Row[];
  return rows.map((row) => toEntry<R>(row));
}

export async function findVersion<R>(knex: Knex, tenant: string, kind: DefinitionKind, externalId: string, version: number): Promise<HistoryEntry<R> | undefined> {
  const row = (await knex("definition_history").where({ tenant, kind, external_id: externalId, version }).first(COLUMNS)) as Row | undefined;
  return row === undefined ? undefined : toEntry<R>(row);
}

/**
 * A new row's createdAt and updatedAt: the statement's millisecond, but later than every updatedAt
 * the history holds for this externalId, so a definition deleted and made again (a restore, a
 * create) never takes back the updatedAt of an earlier one: compiled definitions are cached by it.
 */
export function firstTimestamp(knex: Knex, tenant: string, kind: DefinitionKind, externalId: string): Knex.Raw {
  return knex.raw(
    `date_trunc('milliseconds', greatest(statement_timestamp(),
       (select max((record->>'updatedAt')::timestamptz) + interval '1 millisecond' from definition_history where tenant = ? and kind = ? and external_id = ?)))`,
    [tenant, kind, externalId],
  );
}
