import type { Knex } from "knex";
import { findVersion, listHistory, recordChange, type Actor, type DefinitionKind, type HistoryAction, type HistoryDetail, type HistoryEntry } from "../db/definition-history.js";
import { ProblemError } from "../errors.js";

export type { Actor, HistoryEntry } from "../db/definition-history.js";

/** What API and Calculation Definitions have in common, as their stores answer them. */
export interface StoredDefinition {
  id: string;
  externalId: string;
  active: boolean;
  createdAt: string;
  updatedAt: string;
}

/** One kind's store, as the history writes through it: every function takes the change's transaction. */
export interface VersionedStore<D extends StoredDefinition, I extends { externalId: string }> {
  kind: DefinitionKind;
  find(knex: Knex, tenant: string, externalId: string, lock: boolean): Promise<D | undefined>;
  insert(knex: Knex, tenant: string, input: I): Promise<D>;
  replace(knex: Knex, tenant: string, externalId: string, input: I): Promise<D | undefined>;
  remove(knex: Knex, tenant: string, externalId: string): Promise<D | undefined>;
  /** The input that stores `record` again, under `externalId`. */
  inputOf(record: D, externalId: string): I;
  notFound(externalId: string): ProblemError;
}

/**
 * The writes of one kind of definition, each with its history entry in the same transaction
 * (migration 009): who, when, the action and the whole record, numbered per definition.
 */
export class VersionedDefinitions<D extends StoredDefinition, I extends { externalId: string }> {
  constructor(
    private readonly knex: Knex,
    private readonly store: VersionedStore<D, I>,
  ) {}

  async create(trx: Knex.Transaction, tenant: string, input: I, actor: Actor | undefined): Promise<D> {
    const created = await this.store.insert(trx, tenant, input);
    await this.record(trx, tenant, created, "create", actor);
    return created;
  }

  /**
   * Replaces a definition (the input's externalId may rename it). Recorded as an activate or a
   * deactivate when only `active` changed, a rename under both names, else an update; with
   * `restoredFrom`, a restore, which makes the definition again when there is none.
   */
  async replace(trx: Knex.Transaction, tenant: string, externalId: string, input: I, actor: Actor | undefined, restoredFrom?: number): Promise<D> {
    const before = await this.store.find(trx, tenant, externalId, true);
    if (before === undefined) {
      if (restoredFrom === undefined) throw this.store.notFound(externalId);
      const made = await this.store.insert(trx, tenant, input);
      await this.record(trx, tenant, made, "restore", actor, { restoredFrom });
      return made;
    }
    const after = (await this.store.replace(trx, tenant, externalId, input))!;
    if (after.externalId !== externalId) {
      await this.record(trx, tenant, before, "rename", actor, { renamedTo: after.externalId });
      await this.record(trx, tenant, after, "rename", actor, { renamedFrom: externalId });
    } else if (restoredFrom !== undefined) {
      await this.record(trx, tenant, after, "restore", actor, { restoredFrom });
    } else {
      await this.record(trx, tenant, after, changeAction(before, after), actor);
    }
    return after;
  }

  async delete(trx: Knex.Transaction, tenant: string, externalId: string, actor: Actor | undefined): Promise<void> {
    const deleted = await this.store.remove(trx, tenant, externalId);
    if (deleted === undefined) throw this.store.notFound(externalId);
    await this.record(trx, tenant, deleted, "delete", actor);
  }

  /** Newest first; 404 when the definition neither exists nor ever had a history. */
  async history(tenant: string, externalId: string): Promise<HistoryEntry<D>[]> {
    const entries = await listHistory<D>(this.knex, tenant, this.store.kind, externalId);
    if (entries.length === 0 && (await this.store.find(this.knex, tenant, externalId, false)) === undefined) throw this.store.notFound(externalId);
    return entries;
  }

  /** The input a restore of `version` stores; 404 naming the version when there is none. */
  async restoreInput(tenant: string, externalId: string, version: number): Promise<I> {
    const entry = await findVersion<D>(this.knex, tenant, this.store.kind, externalId, version);
    if (entry === undefined) {
      const problem = this.store.notFound(externalId);
      throw new ProblemError(problem.code, `${problem.message} with a version ${version} in its history`, { errors: [{ path: "version", message: "is not a version of this definition" }] });
    }
    return this.store.inputOf(entry.record, externalId);
  }

  private async record(trx: Knex.Transaction, tenant: string, record: D, action: HistoryAction, actor: Actor | undefined, detail?: HistoryDetail): Promise<void> {
    await recordChange(trx, tenant, this.store.kind, { externalId: record.externalId, action, record, actor, detail });
  }
}

/** "activate" or "deactivate" when a replace changed `active` only, else "update". */
function changeAction(before: StoredDefinition, after: StoredDefinition): HistoryAction {
  const owned = ({ id: _id, createdAt: _c, updatedAt: _u, active: _a, ...rest }: StoredDefinition) => JSON.stringify(rest);
  if (before.active === after.active || owned(before) !== owned(after)) return "update";
  return after.active ? "activate" : "deactivate";
}
