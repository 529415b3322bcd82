import { DateTime } from "luxon";
import { call, type Session } from "./api.js";
import { field, h } from "./dom.js";
import { statusArea } from "./status.js";

/** A raw event as the query answers it (contract §4). */
export interface RawEvent {
  timestamp: string;
  value: number;
  sourceId?: string;
  tags?: string[];
  [key: string]: unknown;
}

export interface EventsEditor {
  element: HTMLElement;
  /** The raw events of the last query: each gets a value field, Save value and Delete. */
  showEvents(events: RawEvent[] | undefined): void;
}

/** Up to this many queried events are listed for editing; more: narrow the range. */
const EDITABLE = 200;

/**
 * A local date-time (`2025-10-26T02:30`, as `<input type=datetime-local>` gives it) in a zone, as an
 * ISO instant; undefined when it is not one. An ISO text with an offset is taken as it is.
 */
export function instantIn(local: string, zone: string): string | undefined {
  const text = local.trim();
  if (text === "") return undefined;
  const at = /(Z|[+-]\d\d:?\d\d)$/.test(text) ? DateTime.fromISO(text, { setZone: true }) : DateTime.fromISO(text, { zone });
  return at.isValid ? at.toUTC().toISO()! : undefined;
}

function nextMillisecond(instant: string): string {
  return new Date(Date.parse(instant) + 1).toISOString();
}

/**
 * Events entered by hand on an Item, through the events API (the same checks: a bad row is the
 * API's 400, listed): rows of timestamp (in the chosen zone), value, source and tags stored with
 * `POST /items/{id}/events`; a queried event's value changed (the same timestamp and source
 * replace it), one event or a range deleted with `DELETE /items/{id}/events?from=&to=`.
 * `changed()` is called after every write, so the chart is redrawn at once.
 */
export function eventsEditor(session: Session, options: { itemId(): string; zone(): string; changed(): Promise<void> }): EventsEditor {
  const status = statusArea("Event entry status");
  const rows = h("tbody");
  const editable = h("div", { class: "editable-events" });
  let rowCount = 0;

  function addRow(): void {
    rowCount += 1;
    const n = rowCount;
    const remove = h("button", { type: "button" }, `Remove row ${n}`);
    const row = h(
      "tr",
      {},
      h("td", {}, h("input", { type: "datetime-local", step: 1, name: "timestamp", "aria-label": `Timestamp of row ${n}` })),
      h("td", {}, h("input", { type: "number", step: "any", name: "value", "aria-label": `Value of row ${n}` })),
      h("td", {}, h("input", { type: "text", name: "sourceId", "aria-label": `Source of row ${n}` })),
      h("td", {}, h("input", { type: "text", name: "tags", "aria-label": `Tags of row ${n} (comma-separated)` })),
      h("td", {}, remove),
    );
    remove.addEventListener("click", () => row.remove());
    rows.append(row);
  }

  function rowEvents(): { events: Record<string, unknown>[]; problems: string[] } {
    const events: Record<string, unknown>[] = [];
    const problems: string[] = [];
    [...rows.children].forEach((row, i) => {
      const input = (name: string) => (row.querySelector(`[name=${name}]`) as HTMLInputElement).value.trim();
      if (input("timestamp") === "" && input("value") === "") return;
      const timestamp = instantIn(input("timestamp"), options.zone());
      if (timestamp === undefined) problems.push(`row ${i + 1}: the timestamp is not a date and time`);
      const event: Record<string, unknown> = { timestamp: timestamp ?? input("timestamp"), value: input("value") === "" ? null : Number(input("value")) };
      if (input("sourceId") !== "") event.sourceId = input("sourceId");
      const tags = input("tags").split(",").map((t) => t.trim()).filter((t) => t !== "");
      if (tags.length > 0) event.tags = tags;
      events.push(event);
    });
    return { events, problems };
  }

  async function write(work: () => Promise<string>): Promise<void> {
    try {
      const said = await work();
      await options.changed();
      status.info(said);
    } catch (err) {
      status.problem(err);
    }
  }

  const itemPath = () => `/items/${encodeURIComponent(options.itemId())}/events`;
  const store = h("button", { type: "button" }, "Store events");
  store.addEventListener("click", () => {
    const { events, problems } = rowEvents();
    if (problems.length > 0 || events.length === 0) {
      status.problem(new Error(problems.length > 0 ? problems.join("; ") : "Enter a timestamp and a value"));
      return;
    }
    void write(async () => {
      const answer = await call<{ stored: number }>(session, "POST", itemPath(), { events });
      rows.replaceChildren();
      addRow();
      return `Stored ${answer.stored} event(s).`;
    });
  });
  const more = h("button", { type: "button" }, "Add row");
  more.addEventListener("click", () => {
    addRow();
    (rows.lastElementChild?.querySelector("input") as HTMLInputElement | null)?.focus();
  });

  const rangeFrom = h("input", { type: "datetime-local", step: 1, name: "deleteFrom" });
  const rangeTo = h("input", { type: "datetime-local", step: 1, name: "deleteTo" });
  const deleteRange = h("button", { type: "button" }, "Delete events in range");
  deleteRange.addEventListener("click", () => {
    const [from, to] = [instantIn(rangeFrom.value, options.zone()), instantIn(rangeTo.value, options.zone())];
    if (from === undefined || to === undefined) {
      status.problem(new Error("Give the range's from and to"));
      return;
    }
    if (!window.confirm(`Delete every event of this item from ${from} to ${to} (to excluded)?`)) return;
    void write(async () => `Deleted ${(await call<{ deleted: number }>(session, "DELETE", `${itemPath()}?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`)).deleted} event(s).`);
  });

  function showEvents(events: RawEvent[] | undefined): void {
    if (events === undefined) {
      editable.replaceChildren();
      return;
    }
    if (events.length > EDITABLE) {
      editable.replaceChildren(h("p", {}, `${events.length} events: narrow the range to ${EDITABLE} or fewer to edit them one by one.`));
      return;
    }
    const zone = options.zone();
    const body = h("tbody");
    for (const event of events) {
      const shown = DateTime.fromISO(event.timestamp, { zone }).toFormat("yyyy-MM-dd HH:mm:ss.SSS");
      const value = h("input", { type: "number", step: "any", value: String(event.value), "aria-label": `Value at ${shown}` });
      const save = h("button", { type: "button" }, `Save value at ${shown}`);
      const del = h("button", { type: "button" }, `Delete event at ${shown}`);
      save.addEventListener("click", () =>
        void write(async () => {
          // The same timestamp and source: the stored event is replaced.
          const { timestamp, value: _old, ...rest } = event;
          await call(session, "POST", itemPath(), { events: [{ ...rest, timestamp, value: value.value === "" ? null : Number(value.value) }] });
          return `Changed the value at ${shown}.`;
        }),
      );
      del.addEventListener("click", () => {
        if (!window.confirm(`Delete the event at ${shown}?`)) return;
        void write(async () => {
          await call(session, "DELETE", `${itemPath()}?from=${encodeURIComponent(event.timestamp)}&to=${encodeURIComponent(nextMillisecond(event.timestamp))}`);
          return `Deleted the event at ${shown}.`;
        });
      });
      body.append(h("tr", {}, h("td", {}, shown), h("td", {}, value), h("td", {}, event.sourceId ?? ""), h("td", {}, save, " ", del)));
    }
    editable.replaceChildren(
      h("table", {}, h("caption", {}, `Edit the queried events (${events.length}), times in ${zone}`), h("thead", {}, h("tr", {}, ...["Time", "Value", "Source", "Actions"].map((c) => h("th", { scope: "col" }, c)))), body),
    );
  }

  addRow();
  const element = h(
    "section",
    { class: "events-editor", "aria-labelledby": "events-editor-title" },
    h("h3", { id: "events-editor-title" }, "Enter events by hand"),
    h("p", {}, "Timestamps are read in the time zone of the query above (the server's default when it is empty)."),
    h("table", {}, h("caption", {}, "New events"), h("thead", {}, h("tr", {}, ...["Timestamp", "Value", "Source", "Tags", ""].map((c) => h("th", { scope: "col" }, c)))), rows),
    h("div", { class: "actions" }, more, store),
    h("div", { class: "row" }, field("Delete from", rangeFrom), field("Delete to", rangeTo), h("div", { class: "actions" }, deleteRange)),
    status.element,
    editable,
  );
  return { element, showEvents };
}
