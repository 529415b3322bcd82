import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "./dom.js";

export interface Point {
  timestamp: string;
  value: number | null;
}

/**
 * Buckets drawn as a line; a null bucket breaks the line (uPlot leaves gaps unless told to span
 * them), so a missing stretch of data is seen, not bridged.
 */
export function chartOf(points: Point[], title: string): HTMLElement {
  const figure = h("figure", { class: "chart", "aria-label": `${title}: ${points.length} points, ${points.filter((p) => p.value === null).length} empty` });
  const xs = points.map((p) => Date.parse(p.timestamp) / 1000);
  const ys = points.map((p) => p.value);
  const width = Math.max(320, Math.min(1100, document.documentElement.clientWidth - 80));
  new uPlot(
    {
      title,
      width,
      height: 280,
      series: [{}, { label: "value", stroke: "#1f6feb", width: 2, points: { show: points.length <= 120 }, spanGaps: false }],
      axes: [{}, {}],
    },
    [xs, ys],
    figure,
  );
  figure.append(h("figcaption", {}, `${title}: ${points.length} points, ${points.filter((p) => p.value === null).length} empty (gaps in the line)`));
  return figure;
}
