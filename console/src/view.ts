import { rounded } from "./chart.js";
import { h } from "./dom.js";

/** A JSON value shown two ways, switched by a pair of radio buttons: formatted JSON or a table. */
export function resultView(title: string): { element: HTMLElement; show(value: unknown): void; clear(): void } {
  const body = h("div", { class: "result-body" });
  const name = `view-${title.toLowerCase().replace(/\W+/g, "-")}`;
  const asJson = h("input", { type: "radio", name, value: "json", checked: true, id: `${name}-json` });
  const asTable = h("input", { type: "radio", name, value: "table", id: `${name}-table` });
  let current: unknown = undefined;
  const render = () => {
    body.replaceChildren();
    if (current === undefined) return;
    // Nothing computed (a run with problems): said once, not a `null` pane or a one-row table.
    if (current === null) {
      body.append(h("p", { class: "no-result" }, `No ${title.toLowerCase()}.`));
      return;
    }
    body.append(asTable.checked ? tableOf(current, title) : h("pre", { class: "json", tabindex: 0, "aria-label": `${title} as JSON` }, JSON.stringify(current, null, 2)));
  };
  asJson.addEventListener("change", render);
  asTable.addEventListener("change", render);
  const element = h(
    "section",
    { class: "result", "aria-label": title },
    h("h3", {}, title),
    h("fieldset", { class: "switch" }, h("legend", {}, `Show ${title.toLowerCase()} as`), asJson, h("label", { for: asJson.id }, "JSON"), asTable, h("label", { for: asTable.id }, "Table")),
    body,
  );
  return {
    element,
    show(value) {
      current = value;
      render();
    },
    clear() {
      current = undefined;
      render();
    },
  };
}

/** Rows of a value: an array of objects, or each array member of an object (the query output's labels). */
export function tableOf(value: unknown, caption: string): HTMLElement {
  if (Array.isArray(value)) return table(value, caption);
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.some(([, v]) => Array.isArray(v))) {
      return h("div", {}, ...entries.map(([key, v]) => (Array.isArray(v) ? table(v, `${caption}: ${key}`) : table([{ [key]: v }], `${caption}: ${key}`))));
    }
    return table([value], caption);
  }
  return table([{ value }], caption);
}

function table(rows: unknown[], caption: string): HTMLElement {
  const objects = rows.map((r) => (r !== null && typeof r === "object" && !Array.isArray(r) ? (r as Record<string, unknown>) : { value: r }));
  const columns = [...new Set(objects.flatMap((o) => Object.keys(o)))];
  return h(
    "table",
    {},
    h("caption", {}, `${caption} (${rows.length} rows)`),
    h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, ...objects.map((o) => h("tr", {}, ...columns.map((c) => h("td", {}, cell(o[c])))))),
  );
}

function cell(value: unknown): string {
  if (value === undefined) return "";
  if (value === null) return "null";
  if (typeof value === "number") return String(rounded(value));
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}
