import uPlot from "uplot";
import type { Session } from "./api.js";
import { axisDates } from "./chart.js";
import { h } from "./dom.js";
import { statusArea } from "./status.js";

/**
 * A live view of a STREAM or INGEST item: the WebSocket stream (`GET /items/{id}/stream`, docs/
 * reference/streams.md), authenticated by its first message as a browser must, each pushed event
 * appended to a line chart as it arrives.
 */
export function liveView(session: Session, options: { itemId(): string; title(): string; zone(): string }): { element: HTMLElement; stop(): void } {
  const status = statusArea("Live view status");
  const chartHost = h("div", { class: "live-chart" });
  const start = h("button", { type: "button" }, "Start live view");
  const stop = h("button", { type: "button", disabled: true }, "Stop live view");
  let socket: WebSocket | undefined;
  let plot: uPlot | undefined;
  const xs: number[] = [];
  const ys: (number | null)[] = [];

  function close(said?: string): void {
    socket?.close(1000);
    socket = undefined;
    start.disabled = false;
    stop.disabled = true;
    if (said !== undefined) status.info(said);
  }

  start.addEventListener("click", () => {
    close();
    xs.length = 0;
    ys.length = 0;
    plot?.destroy();
    const width = Math.max(320, Math.min(1100, document.documentElement.clientWidth - 80));
    plot = new uPlot(
      { title: `${options.title()} (live)`, width, height: 220, series: [{}, { label: "value", stroke: "#2e7d32", width: 2, spanGaps: false }], axes: [axisDates(options.zone()), {}] },
      [xs, ys],
      chartHost,
    );
    const itemId = options.itemId();
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/items/${encodeURIComponent(itemId)}/stream`;
    const opened = new WebSocket(url);
    socket = opened;
    start.disabled = true;
    stop.disabled = false;
    status.info("Connecting…");
    opened.addEventListener("open", () => opened.send(JSON.stringify({ type: "auth", token: session.token, tenant: session.tenant })));
    opened.addEventListener("message", (message) => {
      const data = JSON.parse(String(message.data)) as { type: string; event?: { timestamp: string; value: number | null }; bucket?: { timestamp: string; value: number | null } };
      if (data.type === "subscribed") status.info("Live: waiting for events.");
      const point = data.event ?? data.bucket;
      if (point === undefined) return;
      xs.push(Date.parse(point.timestamp) / 1000);
      ys.push(point.value);
      plot?.setData([xs, ys]);
      status.info(`Live: ${xs.length} point(s) received, the last ${point.value} at ${point.timestamp}.`);
    });
    opened.addEventListener("close", (event) => {
      if (socket !== opened) return;
      close(event.code === 1000 ? "Live view stopped." : `The stream closed (${event.code}${event.reason !== "" ? `: ${event.reason}` : ""}).`);
    });
  });
  stop.addEventListener("click", () => close("Live view stopped."));

  const element = h(
    "section",
    { class: "live", "aria-labelledby": "live-title" },
    h("h3", { id: "live-title" }, "Live view"),
    h("p", {}, "Events pushed for this item (STREAM or INGEST) are drawn as they arrive."),
    h("div", { class: "actions" }, start, stop),
    status.element,
    h("figure", { class: "chart", "aria-label": "Live events chart" }, chartHost),
  );
  return { element, stop: () => close() };
}
