import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./process.js";

/** One row of the metrics table of docs/reference/observability.md. */
export interface DocumentedMetric {
  name: string;
  type: string;
  labels: string[];
}

export const OBSERVABILITY_DOC = join(ROOT, "docs", "reference", "observability.md");
export const DASHBOARD = join(ROOT, "docs", "grafana-dashboard.json");

/** The metrics section of the observability reference: its table's rows, and every name it quotes (Node's metrics too). */
export function documentedMetrics(): { table: DocumentedMetric[]; quoted: Set<string> } {
  const text = readFileSync(OBSERVABILITY_DOC, "utf8");
  const section = text.slice(text.indexOf("## Metrics"), text.indexOf("## Traces"));
  const table: DocumentedMetric[] = [];
  for (const line of section.split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    const name = /^`([a-z_:][a-z0-9_:]*)`$/.exec(cells[1] ?? "")?.[1];
    if (name === undefined) continue;
    const labels = [...(cells[3] ?? "").matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
    table.push({ name, type: cells[2]!, labels });
  }
  const quoted = new Set([...section.matchAll(/`([a-z][a-z0-9_:]*)`/g)].map((m) => m[1]!).filter((n) => /_(total|seconds|bytes)$|^(transform|process|nodejs)_/.test(n)));
  return { table, quoted };
}

/** The metric names a PromQL expression reads (a histogram's `_bucket`, `_sum`, `_count` series by their metric's name). */
export function metricsOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, "")
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(by|without)\s*\([^)]*\)/g, "");
  // A name followed by "(" is a function; the rest, past the aggregations' keywords, are metrics.
  const names = [...bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)].filter((m) => m[2] === undefined).map((m) => m[1]!).filter((n) => !/^(by|without|on|ignoring|bool|offset)$/.test(n));
  return names.map((n) => n.replace(/_(bucket|sum|count)$/, ""));
}
