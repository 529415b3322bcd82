import { diffLines } from "diff";
import { call, type Session } from "./api.js";
import { h, uid } from "./dom.js";
import { statusArea } from "./status.js";

/** One entry of `GET …/{externalId}/history`. */
interface HistoryEntry {
  version: number;
  action: string;
  changedBy: { userId: string | null; name: string | null };
  changedAt: string;
  restoredFrom?: number;
  renamedFrom?: string;
  renamedTo?: string;
  record: Record<string, unknown>;
}

export interface HistoryOptions {
  /** `/api-definitions` or `/calculation-definitions`. */
  base: string;
  /** "API definition", "calculation definition". */
  noun: string;
  /** After a restore or a delete: show the definition restored, or none (the list has changed). */
  changed(externalId: string | undefined): Promise<void>;
}

export interface HistoryPanel {
  element: HTMLElement;
  /** Shows the history of `externalId`; nothing for an unsaved definition. */
  load(externalId: string | undefined, note?: string): Promise<void>;
  /** Deletes `externalId` once the user confirms, then shows its history; true when it was deleted. */
  remove(externalId: string): Promise<boolean>;
}

/** A record as lines to compare: the user's fields, a multi-line text (query, transform) one line per line. */
function recordLines(record: Record<string, unknown> | undefined): string {
  if (record === undefined) return "";
  const lines: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (key === "id" || key === "createdAt" || key === "updatedAt") continue;
    if (typeof value === "string" && value.includes("\n")) lines.push(`${key}: |`, ...value.split("\n").map((l) => `  ${l}`));
    else lines.push(`${key}: ${JSON.stringify(value, null, 2)}`);
  }
  return `${lines.join("\n")}\n`;
}

const when = (iso: string) => iso.replace("T", " ").replace(/\.\d+Z$/, " UTC");
const who = (e: HistoryEntry) => [e.changedBy.name, e.changedBy.userId].filter((x) => x !== null).join(" · ") || "unknown user";
function describe(e: HistoryEntry): string {
  const extra = e.restoredFrom !== undefined ? ` of version ${e.restoredFrom}` : e.renamedTo !== undefined ? ` to ${e.renamedTo}` : e.renamedFrom !== undefined ? ` from ${e.renamedFrom}` : "";
  return `Version ${e.version}: ${e.action}${extra}, by ${who(e)}, ${when(e.changedAt)}`;
}

/**
 * The history of the selected definition: its versions newest first (each a button), the chosen
 * version's record as a line diff against the version before it or against the current
 * definition, and Restore.
 */
export function historyPanel(session: Session, options: HistoryOptions): HistoryPanel {
  const titleId = uid("history-title");
  const title = h("h3", { id: titleId }, "History");
  const list = h("ol", { class: "history-list", "aria-label": "Versions, newest first" });
  const compare = h("select", { name: "compare" }, h("option", { value: "previous" }, "the version before it"), h("option", { value: "current" }, "the current definition"));
  const compareId = uid("compare");
  compare.id = compareId;
  const diffView = h("pre", { class: "diff", "aria-label": "Differences", tabindex: 0 });
  const restore = h("button", { type: "button", disabled: true }, "Restore this version");
  const status = statusArea("History status");
  let externalId: string | undefined;
  let entries: HistoryEntry[] = [];
  let chosen: HistoryEntry | undefined;

  function render(): void {
    list.replaceChildren(
      ...entries.map((e) => {
        const button = h("button", { type: "button", class: "version", "aria-pressed": e === chosen ? "true" : "false" }, describe(e));
        button.addEventListener("click", () => choose(e));
        return h("li", {}, button);
      }),
    );
    restore.disabled = chosen === undefined;
    restore.textContent = chosen === undefined ? "Restore this version" : `Restore version ${chosen.version}`;
    if (chosen === undefined) {
      diffView.replaceChildren(entries.length === 0 ? "No history." : "Choose a version to see what changed.");
      return;
    }
    const index = entries.indexOf(chosen);
    const current = entries[0]?.action === "delete" ? undefined : entries[0];
    const against = compare.value === "current" ? current : entries[index + 1];
    const label = compare.value === "current" ? (current === undefined ? "deleted" : `current (version ${current.version})`) : against === undefined ? "nothing before" : `version ${against.version}`;
    const parts = diffLines(recordLines(against?.record), recordLines(chosen.record));
    const changed = parts.some((p) => p.added || p.removed);
    diffView.replaceChildren(
      h("span", { class: "diff-head" }, `--- ${label}\n+++ version ${chosen.version}${changed ? "" : " (no difference)"}\n`),
      ...parts.flatMap((p) =>
        p.value
          .replace(/\n$/, "")
          .split("\n")
          .map((line) => h("span", { class: p.added ? "ins" : p.removed ? "del" : "same" }, `${p.added ? "+" : p.removed ? "-" : " "} ${line}\n`)),
      ),
    );
  }

  function choose(entry: HistoryEntry): void {
    chosen = entry;
    render();
  }

  async function load(id: string | undefined, note?: string): Promise<void> {
    externalId = id;
    entries = [];
    chosen = undefined;
    title.textContent = id === undefined ? "History" : `History of ${id}${note === undefined ? "" : ` (${note})`}`;
    if (id !== undefined) {
      try {
        entries = (await call<{ history: HistoryEntry[] }>(session, "GET", `${options.base}/${encodeURIComponent(id)}/history`)).history;
        chosen = entries[0];
      } catch (err) {
        status.problem(err);
      }
    }
    render();
  }

  restore.addEventListener("click", () => {
    const version = chosen?.version;
    const id = externalId;
    if (version === undefined || id === undefined) return;
    void (async () => {
      try {
        await call(session, "POST", `${options.base}/${encodeURIComponent(id)}/history/${version}/restore`);
        await options.changed(id);
        await load(id);
        status.info(`Restored version ${version} of ${id}.`);
      } catch (err) {
        status.problem(err);
      }
    })();
  });
  compare.addEventListener("change", render);

  const element = h(
    "section",
    { class: "history", "aria-labelledby": titleId },
    title,
    h("div", { class: "history-body" }, list, h("div", {}, h("div", { class: "field" }, h("label", { for: compareId }, "Compare with"), compare), diffView, h("div", { class: "actions" }, restore))),
    status.element,
  );
  async function remove(id: string): Promise<boolean> {
    if (!(await confirmDelete(options.noun, id))) return false;
    await call(session, "DELETE", `${options.base}/${encodeURIComponent(id)}`);
    await options.changed(undefined);
    await load(id, "deleted");
    return true;
  }
  return { element, load, remove };
}

/**
 * Asks before a delete, in a modal dialog: the focus starts on Cancel, Escape cancels.
 * Resolves true when the user confirms.
 */
function confirmDelete(noun: string, externalId: string): Promise<boolean> {
  const titleId = uid("confirm-title");
  const cancel = h("button", { type: "button", autofocus: true }, "Cancel");
  const confirm = h("button", { type: "button", class: "danger" }, `Delete ${externalId}`);
  const dialog = h(
    "dialog",
    { class: "confirm", "aria-labelledby": titleId },
    h("h3", { id: titleId }, `Delete ${noun} ${externalId}?`),
    h("p", {}, "It stops answering at once. Its history is kept: a version can be restored later."),
    h("div", { class: "actions" }, cancel, confirm),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    const close = (answer: boolean) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    cancel.addEventListener("click", () => close(false));
    confirm.addEventListener("click", () => close(true));
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      close(false);
    });
    dialog.showModal();
  });
}
