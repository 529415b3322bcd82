// Definitions as code (docs/how-to/definitions-as-code.md): a tenant's API and Calculation
// Definitions as one YAML file each, compared with and applied to a running service over its REST API.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { diffLines } from "diff";
import { parse, stringify } from "yaml";

export type Kind = "api" | "calculation";
export const KINDS: Kind[] = ["api", "calculation"];

/** The fields a user owns, in the order files show them; server fields (id, createdAt, updatedAt) are left out. */
const FIELDS: Record<Kind, string[]> = {
  api: ["externalId", "name", "version", "active", "data", "query", "transform"],
  calculation: ["externalId", "name", "calculationType", "active", "data"],
};
const PATHS: Record<Kind, string> = { api: "/api-definitions", calculation: "/calculation-definitions" };
const LISTS: Record<Kind, string> = { api: "apiDefinitions", calculation: "calculationDefinitions" };

export type Definition = Record<string, unknown> & { externalId: string };

/** A failure the command reports and ends on with exit code 1. */
export class CommandError extends Error {}

/** Objects with their keys sorted, at every depth: a file does not change when the service returns keys in another order. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sorted((value as Record<string, unknown>)[key])]));
}

/**
 * A definition as its file holds it: the user's fields only, in a fixed order, nested keys sorted,
 * the service's defaults written out (`active: true`, an API definition's empty `transform`, a
 * calculation's empty `name`) and an API definition's absent name or version left out.
 */
export function canonical(kind: Kind, definition: Record<string, unknown>): Definition {
  const filled: Record<string, unknown> = { active: true, data: {}, ...(kind === "api" ? { transform: "" } : { name: "" }), ...definition };
  const out: Record<string, unknown> = {};
  for (const field of FIELDS[kind]) {
    const value = filled[field];
    if (value === undefined || value === null) continue;
    out[field] = field === "data" ? sorted(value) : value;
  }
  return out as Definition;
}

export function toYaml(definition: Definition): string {
  return stringify(definition, { lineWidth: 0, blockQuote: "literal", indent: 2 });
}

/** The file of a definition, relative to the folder. */
export const fileOf = (kind: Kind, externalId: string) => join(kind, `${externalId}.yaml`);

/** A running service, as the command reaches it: base URL, bearer token, tenant. */
export interface Target {
  url: string;
  token: string | undefined;
  tenant: string;
}

async function call(target: Target, method: string, path: string, body?: unknown): Promise<unknown> {
  const headers: Record<string, string> = { "x-tenant-id": target.tenant, accept: "application/json" };
  if (target.token !== undefined) headers.authorization = `Bearer ${target.token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(new URL(path, target.url), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new CommandError(`${method} ${path}: cannot reach ${target.url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) {
    let detail = text;
    try {
      const problem = JSON.parse(text) as { code?: string; detail?: string; errors?: { path?: string; message: string }[] };
      detail = `${problem.code ?? res.status}: ${problem.detail ?? ""}${(problem.errors ?? []).map((e) => `\n    ${e.path ?? ""} ${e.message}`).join("")}`;
    } catch {
      // Not problem+json: the body as it is.
    }
    throw new CommandError(`${method} ${path}: ${res.status} ${detail}`);
  }
  return text === "" ? undefined : JSON.parse(text);
}

/** Every definition of the tenant, by kind and externalId, as files would hold them. */
export async function readService(target: Target): Promise<Map<string, Definition>> {
  const all = new Map<string, Definition>();
  for (const kind of KINDS) {
    for (let offset = 0; ; ) {
      const page = (await call(target, "GET", `${PATHS[kind]}?limit=1000&offset=${offset}`)) as Record<string, unknown> & { total: number };
      const rows = page[LISTS[kind]] as Record<string, unknown>[];
      for (const row of rows) all.set(fileOf(kind, String(row.externalId)), canonical(kind, row));
      offset += rows.length;
      if (rows.length === 0 || offset >= page.total) break;
    }
  }
  return all;
}

/** Every definition file of the folder, by kind and externalId; a file whose name is not its externalId is an error. */
export function readFolder(dir: string): Map<string, Definition> {
  const all = new Map<string, Definition>();
  for (const kind of KINDS) {
    let names: string[];
    try {
      names = readdirSync(join(dir, kind)).filter((n) => n.endsWith(".yaml")).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const file = fileOf(kind, name.slice(0, -".yaml".length));
      let parsed: unknown;
      try {
        parsed = parse(readFileSync(join(dir, file), "utf8"));
      } catch (err) {
        throw new CommandError(`${file}: not YAML: ${(err as Error).message}`);
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new CommandError(`${file}: must hold one definition (a mapping)`);
      const unknown = Object.keys(parsed).filter((key) => !FIELDS[kind].includes(key));
      if (unknown.length > 0) throw new CommandError(`${file}: unknown field(s) ${unknown.join(", ")}; a ${kind} definition has ${FIELDS[kind].join(", ")}`);
      const definition = canonical(kind, parsed as Record<string, unknown>);
      if (fileOf(kind, String(definition.externalId)) !== file) throw new CommandError(`${file}: externalId "${String(definition.externalId)}" must be the file's name`);
      all.set(file, definition);
    }
  }
  return all;
}

/** Writes the folder: one file per definition; files of definitions the service no longer has are removed. */
export function writeFolder(dir: string, definitions: Map<string, Definition>): { written: number; removed: string[] } {
  const removed: string[] = [];
  for (const kind of KINDS) {
    mkdirSync(join(dir, kind), { recursive: true });
    for (const name of readdirSync(join(dir, kind))) {
      const file = join(kind, name);
      if (name.endsWith(".yaml") && !definitions.has(file)) {
        rmSync(join(dir, file));
        removed.push(file);
      }
    }
  }
  for (const [file, definition] of definitions) writeFileSync(join(dir, file), toYaml(definition));
  return { written: definitions.size, removed };
}

export interface Change {
  action: "create" | "update" | "delete";
  file: string;
  kind: Kind;
  before?: Definition;
  after?: Definition;
}

/** What applying the folder would do: creates and updates, and the deletes `--prune` asks for; the definitions the folder lacks otherwise. */
export function plan(folder: Map<string, Definition>, service: Map<string, Definition>, prune: boolean): { changes: Change[]; kept: string[] } {
  const kindOf = (file: string) => file.split(/[/\\]/)[0] as Kind;
  const changes: Change[] = [];
  const kept: string[] = [];
  for (const [file, after] of [...folder].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const before = service.get(file);
    if (before === undefined) changes.push({ action: "create", file, kind: kindOf(file), after });
    else if (toYaml(before) !== toYaml(after)) changes.push({ action: "update", file, kind: kindOf(file), before, after });
  }
  for (const [file, before] of [...service].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (folder.has(file)) continue;
    if (prune) changes.push({ action: "delete", file, kind: kindOf(file), before });
    else kept.push(file);
  }
  return { changes, kept };
}

/** A change as the diff shows it: the file, then each field that differs, as a line diff of its YAML. */
export function describe(change: Change): string {
  const sign = { create: "+", update: "~", delete: "-" }[change.action];
  const lines = [`${sign} ${change.file} (${change.action})`];
  const keys = [...new Set([...Object.keys(change.before ?? {}), ...Object.keys(change.after ?? {})])];
  const field = (d: Definition | undefined, key: string) => (d === undefined || d[key] === undefined ? "" : stringify({ [key]: d[key] }, { lineWidth: 0, blockQuote: "literal" }));
  for (const key of keys) {
    const before = field(change.before, key);
    const after = field(change.after, key);
    if (before === after) continue;
    if (change.action === "update") lines.push(`    ${key}:`);
    for (const part of diffLines(before, after)) {
      const mark = part.added ? "+" : part.removed ? "-" : " ";
      for (const line of part.value.replace(/\n$/, "").split("\n")) lines.push(`      ${mark} ${line}`);
    }
  }
  return lines.join("\n");
}

/**
 * Applies the changes: creates and updates first, each kind's in turn, then deletes. A calculation
 * may name another the folder creates later in the order: what the service refuses is tried again
 * while a round makes progress, so references resolve in any order; what still fails is the error.
 */
export async function apply(target: Target, changes: Change[], log: (line: string) => void): Promise<void> {
  let pending = changes.filter((c) => c.action !== "delete");
  while (pending.length > 0) {
    const failed: { change: Change; error: CommandError }[] = [];
    for (const change of pending) {
      const path = PATHS[change.kind];
      try {
        if (change.action === "create") await call(target, "POST", path, change.after);
        else await call(target, "PUT", `${path}/${encodeURIComponent(change.after!.externalId)}`, change.after);
        log(`${change.action === "create" ? "created" : "updated"} ${change.file}`);
      } catch (err) {
        if (!(err instanceof CommandError)) throw err;
        failed.push({ change, error: err });
      }
    }
    if (failed.length === pending.length) throw new CommandError(failed.map((f) => `${f.change.file}: ${f.error.message}`).join("\n"));
    pending = failed.map((f) => f.change);
  }
  for (const change of changes.filter((c) => c.action === "delete")) {
    await call(target, "DELETE", `${PATHS[change.kind]}/${encodeURIComponent(change.before!.externalId)}`);
    log(`deleted ${change.file}`);
  }
}
