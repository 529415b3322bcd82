import { readFileSync } from "node:fs";
import { expect } from "chai";
import { DASHBOARD, documentedMetrics, metricsOf } from "./support/metrics-doc.js";

/**
 * The Grafana dashboard (docs/grafana-dashboard.json) imports cleanly: a dashboard's shape, and
 * every expression reads only metrics the observability reference documents (and so /metrics
 * exposes: test/http/metrics.test.ts).
 */

interface Target {
  refId?: unknown;
  expr?: unknown;
  datasource?: unknown;
}
interface Panel {
  id?: unknown;
  type?: unknown;
  title?: unknown;
  gridPos?: { h?: unknown; w?: unknown; x?: unknown; y?: unknown };
  targets?: Target[];
}

describe("the Grafana dashboard", () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as { title?: unknown; uid?: unknown; schemaVersion?: unknown; panels?: Panel[]; templating?: { list?: { name?: unknown; type?: unknown }[] } };

  it("has a dashboard's shape: title, uid, schema version, a data source variable, panels with ids, places and targets", () => {
    expect(dashboard.title).to.be.a("string").and.not.equal("");
    expect(dashboard.uid).to.match(/^[a-z0-9-]{1,40}$/);
    expect(dashboard.schemaVersion).to.be.a("number");
    expect(dashboard.templating?.list?.find((v) => v.name === "datasource")).to.include({ type: "datasource" });
    const panels = dashboard.panels ?? [];
    expect(panels.length).to.be.at.least(8);
    expect(new Set(panels.map((p) => p.id)).size).to.equal(panels.length);
    for (const panel of panels) {
      expect(panel.title, JSON.stringify(panel.id)).to.be.a("string");
      expect(panel.type).to.be.oneOf(["timeseries", "stat", "gauge", "table"]);
      for (const key of ["h", "w", "x", "y"] as const) expect(panel.gridPos?.[key], `${panel.title} gridPos.${key}`).to.be.a("number");
      expect(panel.targets?.length, String(panel.title)).to.be.greaterThan(0);
      const refIds = panel.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, String(panel.title)).to.equal(refIds.length);
      for (const target of panel.targets!) expect(target.expr, String(panel.title)).to.be.a("string").and.not.equal("");
    }
  });

  it("reads only metrics the observability reference documents, and shows every metric of its table", () => {
    const { table, quoted } = documentedMetrics();
    expect(table.length).to.be.at.least(10);
    const read = new Set<string>();
    for (const panel of dashboard.panels ?? []) {
      for (const target of panel.targets ?? []) {
        const names = metricsOf(target.expr as string);
        expect(names.length, String(target.expr)).to.be.greaterThan(0);
        for (const name of names) {
          expect(quoted.has(name), `${String(panel.title)}: ${name} is not a documented metric`).to.equal(true);
          read.add(name);
        }
      }
    }
    expect(table.map((m) => m.name).filter((name) => !read.has(name))).to.deep.equal([]);
  });

  it("reads a metric's name out of PromQL (the check above depends on it)", () => {
    expect(metricsOf('histogram_quantile(0.95, sum by (le, topic) (rate(task_duration_seconds_bucket{job=~"$job"}[5m])))')).to.deep.equal(["task_duration_seconds"]);
    expect(metricsOf('sum(rate(a_total{status="5xx"}[1m])) / sum(rate(b_seconds_count[1m]))')).to.deep.equal(["a_total", "b_seconds"]);
  });
});
