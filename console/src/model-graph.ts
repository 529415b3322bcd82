/**
 * A calculation definition seen as a graph: its scope inputs, its steps (or the one expression of
 * an EXPRESSION) and its output are nodes; an edge goes from a name to each expression that reads
 * it. Pure functions over the definition's JSON, so that the modeler and the JSON editor edit one
 * and the same object.
 */

export interface ScopeEntry {
  type?: string;
  value?: number;
  expression?: string;
  timeseries?: { selectVariable?: string; items?: { id: string }[]; metric?: string; lag?: number; [key: string]: unknown };
  reduce?: { reduceType?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export interface Block {
  select?: string;
  expression?: string;
  steps?: { name: string; expression: string }[];
  output?: string;
  expressionType?: string;
  scope?: Record<string, ScopeEntry>;
  [key: string]: unknown;
}

export interface Model {
  externalId?: string;
  name?: string;
  calculationType?: string;
  active?: boolean;
  data?: { inputDefinitions?: { name: string; type?: string; label?: string }[]; calculation?: Block; [key: string]: unknown };
  [key: string]: unknown;
}

export type NodeKind = "input" | "step" | "output";

export interface GraphNode {
  /** `scope:<name>`, `step:<index>`, `expression` or `output`. */
  id: string;
  kind: NodeKind;
  title: string;
  detail: string;
}

export interface GraphEdge {
  from: string;
  to: string;
}

/** Whether the definition is edited as named steps (CALCULATION) or one expression. */
export function isModel(model: Model): boolean {
  return model.calculationType === "CALCULATION";
}

export function blockOf(model: Model): Block {
  model.data ??= {};
  model.data.calculation ??= {};
  return model.data.calculation;
}

/** The names an expression reads: identifiers not called as functions (the server's check is the reference). */
export function namesRead(expression: string): Set<string> {
  const names = new Set<string>();
  for (const match of expression.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) {
    const end = (match.index ?? 0) + match[0].length;
    const before = expression[(match.index ?? 0) - 1];
    if (before !== undefined && /[0-9.]/.test(before)) continue;
    if (/^\s*\(/.test(expression.slice(end))) continue;
    names.add(match[0]);
  }
  return names;
}

function scopeDetail(entry: ScopeEntry, callerInput: boolean): string {
  const type = entry.type ?? "TIMESERIES";
  const what =
    type === "VALUE"
      ? `= ${entry.value ?? "?"}`
      : type === "EXPRESSION"
        ? `→ ${entry.expression ?? "?"}`
        : type === "REDUCE"
          ? `${entry.reduce?.reduceType ?? "?"} of ${entry.timeseries?.selectVariable ?? "items"}`
          : (entry.timeseries?.selectVariable ?? `${entry.timeseries?.items?.length ?? 0} item(s)`);
  return `${type} ${what}${callerInput ? " (input)" : ""}`;
}

export function graphOf(model: Model): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const block = model.data?.calculation ?? {};
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const byName = new Map<string, string>();
  const callerInputs = new Set((model.data?.inputDefinitions ?? []).map((d) => d.name));
  for (const [name, entry] of Object.entries(block.scope ?? {})) {
    const id = `scope:${name}`;
    nodes.push({ id, kind: "input", title: name, detail: scopeDetail(entry ?? {}, callerInputs.has(name)) });
    byName.set(name, id);
  }
  const expressions: { id: string; text: string }[] = [];
  if (isModel(model)) {
    (block.steps ?? []).forEach((step, i) => {
      const id = `step:${i}`;
      nodes.push({ id, kind: "step", title: String(step?.name ?? ""), detail: String(step?.expression ?? "") });
      if (typeof step?.name === "string" && !byName.has(step.name)) byName.set(step.name, id);
      expressions.push({ id, text: String(step?.expression ?? "") });
    });
  } else {
    nodes.push({ id: "expression", kind: "step", title: "expression", detail: block.expression ?? "" });
    expressions.push({ id: "expression", text: block.expression ?? "" });
  }
  for (const { id, text } of expressions) {
    for (const name of namesRead(text)) {
      const from = byName.get(name);
      if (from !== undefined && from !== id) edges.push({ from, to: id });
    }
  }
  const kind = model.calculationType === "STATE-EXPRESSION" ? "VALUE" : (block.expressionType ?? "TIMESERIES");
  nodes.push({ id: "output", kind: "output", title: "output", detail: isModel(model) ? `${block.output ?? "?"} (${kind})` : kind });
  const outputFrom = isModel(model) ? byName.get(block.output ?? "") : "expression";
  if (outputFrom !== undefined && outputFrom.startsWith("step:")) edges.push({ from: outputFrom, to: "output" });
  else if (outputFrom === "expression") edges.push({ from: "expression", to: "output" });
  return { nodes, edges };
}

/**
 * The node a problem's path belongs to (`data.calculation.scope.a.type` → `scope:a`,
 * `data.calculation.steps[1].expression` → `step:1`); problems about the steps as a whole (a
 * cycle) belong to each step they name. Undefined: the definition as a whole.
 */
export function nodesOfProblem(model: Model, problem: { path?: string; message?: string }): string[] {
  const path = problem.path ?? "";
  const scope = /^data\.calculation\.scope\.([A-Za-z0-9_]+)/.exec(path);
  if (scope !== null) return [`scope:${scope[1]}`];
  const step = /^data\.calculation\.steps\[(\d+)\]/.exec(path);
  if (step !== null) return [`step:${step[1]}`];
  if (path === "data.calculation.expression") return ["expression"];
  if (path === "data.calculation.output" || path === "data.calculation.expressionType") return ["output"];
  if (path === "data.calculation.steps" || path === "data.calculation.scope") {
    const named = namesRead(problem.message ?? "");
    const ids: string[] = [];
    (blockOf(model).steps ?? []).forEach((s, i) => named.has(s.name) && ids.push(`step:${i}`));
    for (const name of Object.keys(blockOf(model).scope ?? {})) if (named.has(name) && path.endsWith("scope")) ids.push(`scope:${name}`);
    return ids;
  }
  return [];
}

/** A name not used yet by a scope or a step: `prefix`, `prefix2`, … */
export function freshName(model: Model, prefix: string): string {
  const block = blockOf(model);
  const used = new Set([...Object.keys(block.scope ?? {}), ...(block.steps ?? []).map((s) => s.name)]);
  for (let i = 1; ; i++) {
    const name = i === 1 ? prefix : `${prefix}${i}`;
    if (!used.has(name)) return name;
  }
}

/** Makes `to` read `from`: its expression gains `+ from` (or is `from` when empty). Answers false when it already reads it. */
export function connect(model: Model, fromName: string, toId: string): boolean {
  const block = blockOf(model);
  const read = (text: string) => (text.trim() === "" ? fromName : `${text} + ${fromName}`);
  if (toId === "expression") {
    if (namesRead(block.expression ?? "").has(fromName)) return false;
    block.expression = read(block.expression ?? "");
    return true;
  }
  if (toId === "output") {
    if (!isModel(model)) return false;
    block.output = fromName;
    return true;
  }
  const step = /^step:(\d+)$/.exec(toId);
  const target = step === null ? undefined : block.steps?.[Number(step[1])];
  if (target === undefined || target.name === fromName || namesRead(target.expression).has(fromName)) return false;
  target.expression = read(target.expression);
  return true;
}

/** Renames a scope input or a step, and every expression and output that reads the old name. */
export function rename(model: Model, id: string, name: string): void {
  const block = blockOf(model);
  let old: string | undefined;
  if (id.startsWith("scope:")) {
    old = id.slice("scope:".length);
    if (old === name || block.scope === undefined) return;
    block.scope = Object.fromEntries(Object.entries(block.scope).map(([k, v]) => [k === old ? name : k, v]));
    for (const d of model.data?.inputDefinitions ?? []) if (d.name === old) d.name = name;
  } else {
    const step = block.steps?.[Number(id.slice("step:".length))];
    if (step === undefined || step.name === name) return;
    old = step.name;
    step.name = name;
    if (block.output === old) block.output = name;
  }
  const swap = (text: string) => text.replace(new RegExp(`(?<![A-Za-z0-9_.])${old}(?![A-Za-z0-9_])(?!\\s*\\()`, "g"), name);
  if (block.expression !== undefined) block.expression = swap(block.expression);
  for (const s of block.steps ?? []) s.expression = swap(s.expression);
}

/** Removes a scope input or a step (the expressions reading it then have a problem the check names). */
export function remove(model: Model, id: string): void {
  const block = blockOf(model);
  if (id.startsWith("scope:")) {
    const name = id.slice("scope:".length);
    if (block.scope !== undefined) delete block.scope[name];
    if (model.data?.inputDefinitions !== undefined) model.data.inputDefinitions = model.data.inputDefinitions.filter((d) => d.name !== name);
  } else if (id.startsWith("step:")) {
    const index = Number(id.slice("step:".length));
    const [gone] = block.steps?.splice(index, 1) ?? [];
    if (gone !== undefined && block.output === gone.name) block.output = block.steps?.[block.steps.length - 1]?.name;
  }
}
