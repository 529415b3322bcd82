import dagre from "@dagrejs/dagre";
import type { ProblemDetail } from "./api.js";
import { field, h, select } from "./dom.js";
import { blockOf, connect, freshName, graphOf, isModel, nodesOfProblem, remove, rename, type GraphNode, type Model } from "./model-graph.js";

const SVG = "http://www.w3.org/2000/svg";
const NODE_WIDTH = 190;
const NODE_HEIGHT = 52;
const SCOPE_TYPES = ["TIMESERIES", "VALUE", "REDUCE", "EXPRESSION", "firstValue", "lastValue", "aggregation"];
const REDUCE_TYPES = ["percentile10", "percentile25", "percentile50", "percentile75", "percentile90", "sum", "avg", "stddev", "mad", "median", "count", "max", "min"];

export interface Modeler {
  element: HTMLElement;
  /** Shows a definition (from the JSON editor, or a stored one); the modeler edits a copy. */
  setModel(model: Model): void;
  /** Problems of the last run or save, each drawn on its node. */
  showProblems(problems: ProblemDetail[]): void;
  /** The JSON text is not a definition: the graph stays on the last good one, says so. */
  setInvalid(message: string | undefined): void;
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number> = {}, ...children: (SVGElement | string)[]): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

function clip(text: string, length = 26): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/**
 * The visual modeler of a calculation: inputs, steps and output drawn as a graph laid out by dagre
 * (left to right, edges from a name to what reads it) in SVG. Nodes are focusable buttons; the
 * selected node is edited in a form beside the canvas; every edit goes back to the JSON through
 * `onChange`, and the JSON editor's edits come in through `setModel`.
 */
export function modeler(options: { onChange(model: Model): void; onRun(): void }): Modeler {
  let model: Model = {};
  let problems: ProblemDetail[] = [];
  let selected: string | undefined;
  let connectFrom: string | undefined;
  const canvas = h("div", { class: "model-canvas" });
  const panel = h("div", { class: "model-panel", role: "region", "aria-label": "Selected node" });
  const notice = h("p", { class: "model-notice", role: "status", "aria-label": "Modeler status" });
  const addInput = h("button", { type: "button" }, "Add input");
  const addStep = h("button", { type: "button" }, "Add step");
  const useSteps = h("button", { type: "button" }, "Use steps (CALCULATION)");
  const run = h("button", { type: "button" }, "Run model");

  const changed = (focus?: string) => {
    options.onChange(structuredClone(model));
    render(focus);
  };

  addInput.addEventListener("click", () => {
    const name = freshName(model, "input");
    const block = blockOf(model);
    block.scope = { ...block.scope, [name]: { type: "VALUE", value: 1 } };
    selected = `scope:${name}`;
    changed(selected);
  });
  addStep.addEventListener("click", () => {
    const block = blockOf(model);
    const name = freshName(model, "step");
    block.steps = [...(block.steps ?? []), { name, expression: "" }];
    if (block.output === undefined) block.output = name;
    selected = `step:${block.steps.length - 1}`;
    changed(selected);
  });
  useSteps.addEventListener("click", () => {
    const block = blockOf(model);
    model.calculationType = "CALCULATION";
    block.steps = [{ name: "result", expression: block.expression ?? "" }];
    block.output = "result";
    delete block.expression;
    selected = "step:0";
    changed(selected);
  });
  run.addEventListener("click", () => options.onRun());

  function problemsOf(id: string): ProblemDetail[] {
    return problems.filter((p) => nodesOfProblem(model, p).includes(id));
  }

  function activate(node: GraphNode): void {
    if (connectFrom !== undefined && connectFrom !== node.id) {
      const from = graphOf(model).nodes.find((n) => n.id === connectFrom);
      const ok = from !== undefined && connect(model, from.title, node.id);
      notice.textContent = ok ? `Connected ${from!.title} to ${node.title}.` : `${node.title} cannot read ${from?.title ?? "that"} (already does, or is not a step).`;
      connectFrom = undefined;
      selected = node.id;
      if (ok) changed(node.id);
      else render(node.id);
      return;
    }
    selected = node.id;
    render(node.id);
  }

  function render(focus?: string): void {
    const { nodes, edges } = graphOf(model);
    const graph = new dagre.graphlib.Graph();
    graph.setGraph({ rankdir: "LR", nodesep: 22, ranksep: 70, marginx: 12, marginy: 12 });
    graph.setDefaultEdgeLabel(() => ({}));
    for (const node of nodes) graph.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
    for (const edge of edges) graph.setEdge(edge.from, edge.to);
    dagre.layout(graph);
    const size = graph.graph();
    const [width, height] = [Math.max(size.width ?? 0, 200), Math.max(size.height ?? 0, 80)];
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "model-graph", role: "group", "aria-label": "Calculation graph" });
    root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#555" }))));
    for (const edge of edges) {
      const points = graph.edge(edge.from, edge.to)?.points ?? [];
      const d = points.map((p: { x: number; y: number }, i: number) => `${i === 0 ? "M" : "L"} ${p.x} ${p.y}`).join(" ");
      root.append(svg("path", { d, class: "model-edge", "data-from": edge.from, "data-to": edge.to, "marker-end": "url(#arrow)" }));
    }
    for (const node of nodes) {
      const at = graph.node(node.id);
      const own = problemsOf(node.id);
      const reads = edges.filter((e) => e.to === node.id).map((e) => nodes.find((n) => n.id === e.from)?.title);
      const label = `${node.kind === "input" ? "Input" : node.kind === "output" ? "Output" : "Step"} ${node.title}: ${node.detail}` +
        (reads.length > 0 ? `; reads ${reads.join(", ")}` : "") + (own.length > 0 ? `; ${own.length} problem(s): ${own.map((p) => p.message).join("; ")}` : "");
      const classes = ["model-node", node.kind, own.length > 0 ? "has-problem" : "", selected === node.id ? "selected" : "", connectFrom === node.id ? "connecting" : ""].filter(Boolean).join(" ");
      const g = svg(
        "g",
        { class: classes, tabindex: 0, role: "button", "aria-label": label, "aria-pressed": String(selected === node.id), "data-node": node.id, transform: `translate(${at.x - NODE_WIDTH / 2}, ${at.y - NODE_HEIGHT / 2})` },
        svg("rect", { width: NODE_WIDTH, height: NODE_HEIGHT, rx: node.kind === "step" ? 6 : 18 }),
        svg("text", { x: 10, y: 20, class: "title" }, clip(`${own.length > 0 ? "⚠ " : ""}${node.title}`)),
        svg("text", { x: 10, y: 40, class: "detail" }, clip(node.detail, 30)),
        svg("title", {}, own.length > 0 ? own.map((p) => p.message ?? "").join("\n") : node.detail),
      );
      g.addEventListener("click", () => activate(node));
      g.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          activate(node);
        } else if (event.key === "Escape" && connectFrom !== undefined) {
          connectFrom = undefined;
          notice.textContent = "Connecting cancelled.";
          render(node.id);
        }
      });
      root.append(g);
    }
    canvas.replaceChildren(root);
    addStep.hidden = !isModel(model);
    useSteps.hidden = isModel(model);
    renderPanel(nodes.find((n) => n.id === selected));
    if (focus !== undefined) (canvas.querySelector(`[data-node="${CSS.escape(focus)}"]`) as SVGGElement | null)?.focus();
  }

  function renderPanel(node: GraphNode | undefined): void {
    if (node === undefined) {
      panel.replaceChildren(h("p", {}, "Choose a node to edit it (click, or Tab to it and press Enter)."));
      return;
    }
    const block = blockOf(model);
    const own = problemsOf(node.id);
    const parts: HTMLElement[] = [h("h4", {}, `${node.kind === "input" ? "Input" : node.kind === "output" ? "Output" : "Step"} ${node.title}`)];
    const apply = h("button", { type: "button" }, "Apply");
    let commit: () => string | undefined = () => node.id;
    if (node.kind === "input") {
      const name = node.title;
      const entry = block.scope?.[name] ?? {};
      const nameInput = h("input", { type: "text", value: name });
      const type = select(SCOPE_TYPES.map((t) => ({ value: t, label: t })), entry.type ?? "TIMESERIES");
      const value = h("input", { type: "text", value: entry.type === "VALUE" ? String(entry.value ?? "") : entry.type === "EXPRESSION" ? (entry.expression ?? "") : (entry.timeseries?.selectVariable ?? "") });
      const reduceType = select(REDUCE_TYPES.map((t) => ({ value: t, label: t })), entry.reduce?.reduceType ?? "avg");
      const callerInput = h("input", { type: "checkbox", checked: (model.data?.inputDefinitions ?? []).some((d) => d.name === name) });
      const valueLabel = () => (type.value === "VALUE" ? "Value (number)" : type.value === "EXPRESSION" ? "Definition (externalId)" : "Select variable ({{?label}})");
      const valueField = field(valueLabel(), value);
      const reduceField = field("Reduce type", reduceType);
      const sync = () => {
        valueField.querySelector("label")!.textContent = valueLabel();
        reduceField.hidden = type.value !== "REDUCE";
      };
      type.addEventListener("change", sync);
      sync();
      parts.push(field("Name", nameInput), field("Type", type), valueField, reduceField, h("label", {}, callerInput, " Caller input (inputDefinitions)"));
      commit = () => {
        const next: typeof entry = { ...entry, type: type.value };
        delete next.value;
        delete next.expression;
        if (type.value === "VALUE") next.value = Number(value.value);
        else if (type.value === "EXPRESSION") next.expression = value.value;
        else {
          next.timeseries = { ...entry.timeseries };
          if (value.value !== "") next.timeseries.selectVariable = value.value;
          else delete next.timeseries.selectVariable;
          if (type.value === "REDUCE") next.reduce = { ...entry.reduce, reduceType: reduceType.value };
        }
        if (type.value !== "REDUCE") delete next.reduce;
        block.scope = { ...block.scope, [name]: next };
        const inputs = (model.data!.inputDefinitions ?? []).filter((d) => d.name !== name);
        if (callerInput.checked) inputs.push({ name, type: type.value === "VALUE" ? "VALUE" : "ITEM" });
        if (inputs.length > 0 || model.data!.inputDefinitions !== undefined) model.data!.inputDefinitions = inputs;
        const newName = nameInput.value.trim();
        if (newName !== "" && newName !== name) rename(model, node.id, newName);
        return `scope:${newName || name}`;
      };
    } else if (node.id === "output") {
      if (isModel(model)) {
        const output = select((block.steps ?? []).map((s) => ({ value: s.name, label: s.name })), block.output);
        parts.push(field("Output step", output));
        const type = select(["TIMESERIES", "VALUE"].map((t) => ({ value: t, label: t })), block.expressionType ?? "TIMESERIES");
        parts.push(field("Result type", type));
        commit = () => {
          block.output = output.value;
          block.expressionType = type.value;
          return node.id;
        };
      } else {
        const type = select(["TIMESERIES", "VALUE"].map((t) => ({ value: t, label: t })), block.expressionType ?? "TIMESERIES");
        parts.push(field("Result type", type));
        commit = () => {
          block.expressionType = type.value;
          return node.id;
        };
      }
    } else {
      const index = node.id === "expression" ? -1 : Number(node.id.slice("step:".length));
      const nameInput = h("input", { type: "text", value: node.title });
      const expression = h("input", { type: "text", class: "expression", value: node.detail });
      if (index >= 0) parts.push(field("Name", nameInput));
      parts.push(field("Expression", expression, "mathjs: scope names, steps, + - * / ^, functions"));
      commit = () => {
        if (index < 0) {
          block.expression = expression.value;
          return node.id;
        }
        block.steps![index]!.expression = expression.value;
        const newName = nameInput.value.trim();
        if (newName !== "" && newName !== node.title) rename(model, node.id, newName);
        return node.id;
      };
    }
    if (own.length > 0) parts.push(h("ul", { class: "problems", "aria-label": "Problems of this node" }, ...own.map((p) => h("li", {}, p.message ?? ""))));
    apply.addEventListener("click", () => {
      selected = commit();
      changed(selected);
    });
    const actions = h("div", { class: "actions" }, apply);
    if (node.kind !== "output") {
      const connectButton = h("button", { type: "button" }, `Connect ${node.title} to…`);
      connectButton.addEventListener("click", () => {
        connectFrom = node.id;
        notice.textContent = `Choose the step that reads ${node.title} (Escape cancels).`;
        render();
        (canvas.querySelector(".model-node.step") as SVGGElement | null)?.focus();
      });
      if (node.id !== "expression") actions.append(connectButton);
    }
    if (node.id.startsWith("scope:") || node.id.startsWith("step:")) {
      const del = h("button", { type: "button" }, `Delete ${node.title}`);
      del.addEventListener("click", () => {
        remove(model, node.id);
        notice.textContent = `Deleted ${node.title}.`;
        selected = undefined;
        changed();
        addInput.focus();
      });
      actions.append(del);
    }
    for (const input of parts.flatMap((p) => [...p.querySelectorAll("input[type=text]")])) {
      input.addEventListener("keydown", (event) => (event as KeyboardEvent).key === "Enter" && apply.click());
    }
    panel.replaceChildren(...parts, actions);
  }

  const element = h(
    "section",
    { class: "modeler", "aria-labelledby": "modeler-title" },
    h("h3", { id: "modeler-title" }, "Visual model"),
    h("div", { class: "actions" }, addInput, addStep, useSteps, run),
    notice,
    h("div", { class: "model-layout" }, canvas, panel),
  );
  return {
    element,
    setModel(next) {
      model = structuredClone(next);
      const ids = new Set(graphOf(model).nodes.map((n) => n.id));
      if (selected !== undefined && !ids.has(selected)) selected = undefined;
      render();
    },
    showProblems(list) {
      problems = list;
      const placed = list.filter((p) => nodesOfProblem(model, p).length > 0).length;
      notice.textContent = list.length === 0 ? "" : `${list.length} problem(s), ${placed} shown on their node.`;
      render();
    },
    setInvalid(message) {
      notice.textContent = message === undefined ? "" : `The JSON is not a definition (${message}): the graph shows the last valid one.`;
    },
  };
}
