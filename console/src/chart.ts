import { DateTime } from "luxon";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "./dom.js";

export interface Point {
  timestamp: string;
  value: number | null;
}

/** A number for display: float noise rounded away (1.4029999999999998 → 1.403); the JSON view keeps full precision. */
export function rounded(value: number): number {
  return Number(value.toPrecision(10));
}

/** ISO-like, 24-hour, in the zone: `2025-10-26 02:00`. */
export function formatTime(seconds: number, zone: string, withSeconds = false): string {
  return DateTime.fromSeconds(seconds, { zone }).toFormat(withSeconds ? "yyyy-MM-dd HH:mm:ss" : "yyyy-MM-dd HH:mm");
}

/** A time axis whose ticks are read in `zone`, ISO-like and 24-hour (the day once, then hours). */
export function axisDates(zone: string): uPlot.Axis {
  return {
    values: (_u, splits) => {
      let day = "";
      return splits.map((s) => {
        const at = DateTime.fromSeconds(s, { zone });
        const date = at.toFormat("yyyy-MM-dd");
        const time = at.toFormat("HH:mm");
        if (date === day) return time;
        day = date;
        return time === "00:00" ? date : `${time}\n${date}`;
      });
    },
  };
}

/** The usual spacing of raw events: the median of the steps between them (ms). */
function usualSpacing(xs: number[]): number | undefined {
  const steps = xs.slice(1).map((x, i) => x - xs[i]!).filter((d) => d > 0).sort((a, b) => a - b);
  return steps.length === 0 ? undefined : steps[Math.floor(steps.length / 2)];
}

export interface ChartOptions {
  /** The request's zone: ticks, legend and caption times are read in it. */
  zone?: string;
  /** Per point: filled by the gap strategy, not measured; drawn dashed with hollow squares. */
  filled?: boolean[];
  /** Raw events: the line is broken where two events are further apart than twice their usual spacing. */
  raw?: boolean;
}

/**
 * Buckets (or raw events) drawn as a line; a null breaks the line (uPlot leaves gaps unless told
 * to span them), so a missing stretch of data is seen, not bridged. Filled buckets are a series of
 * their own, dashed, so interpolated values never look measured.
 */
export function chartOf(points: Point[], title: string, options: ChartOptions = {}): HTMLElement {
  const zone = options.zone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const empty = points.filter((p) => p.value === null).length;
  let xs = points.map((p) => Date.parse(p.timestamp) / 1000);
  let ys = points.map((p) => p.value);
  let filled = options.filled ?? points.map(() => false);
  let breaks = 0;
  if (options.raw === true) {
    const usual = usualSpacing(xs);
    if (usual !== undefined) {
      const [bx, by, bf]: [number[], (number | null)[], boolean[]] = [[], [], []];
      xs.forEach((x, i) => {
        if (i > 0 && x - xs[i - 1]! > 2 * usual) {
          bx.push((x + xs[i - 1]!) / 2);
          by.push(null);
          bf.push(false);
          breaks += 1;
        }
        bx.push(x);
        by.push(ys[i]!);
        bf.push(filled[i]!);
      });
      [xs, ys, filled] = [bx, by, bf];
    }
  }
  const measured = ys.map((y, i) => (filled[i] ? null : y));
  // A filled stretch is drawn from the measured point before it to the one after it.
  const fill = ys.map((y, i) => (filled[i] || filled[i - 1] === true || filled[i + 1] === true ? y : null));
  const filledCount = filled.filter(Boolean).length;
  const caption = `${title}: ${points.length} points, ${empty} empty (gaps in the line)` +
    (filledCount > 0 ? `, ${filledCount} filled by the gap strategy (dashed)` : "") + (breaks > 0 ? `, ${breaks} break(s) where events are further apart than usual` : "") + `; times in ${zone}`;
  const figure = h("figure", { class: "chart", "aria-label": caption });
  const width = Math.max(320, Math.min(1100, document.documentElement.clientWidth - 80));
  const value = (_u: uPlot, v: number | null) => (v === null || v === undefined ? "—" : String(rounded(v)));
  const series: uPlot.Series[] = [
    { value: (_u, v) => (v === null ? "—" : formatTime(v, zone, true)) },
    { label: "measured", stroke: "#1f6feb", width: 2, points: { show: points.length <= 120 }, spanGaps: false, value },
  ];
  if (filledCount > 0) series.push({ label: "filled", stroke: "#c2410c", width: 2, dash: [6, 4], points: { show: true, size: 7, fill: "#fff" }, spanGaps: false, value });
  const data: uPlot.AlignedData = filledCount > 0 ? [xs, measured, fill] : [xs, measured];
  new uPlot({ title, width, height: 280, tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), zone), series, axes: [axisDates(zone), {}] }, data, figure);
  figure.append(h("figcaption", {}, caption));
  return figure;
}
