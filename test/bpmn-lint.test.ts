import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { camundaLinter, type LintReport } from "./support/camunda-linting.js";
import { ROOT } from "./support/process.js";

const BPMN_DIR = join(ROOT, "bpmn");
const models = readdirSync(BPMN_DIR, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".bpmn"))
  .sort();

/** The engine a model is for, as the Modelers read it; without it the linter checks nothing. */
function platformOf(xml: string): { type: "cloud" | "platform"; version: string } {
  const platform = /modeler:executionPlatform="([^"]*)"/.exec(xml)?.[1];
  const version = /modeler:executionPlatformVersion="([^"]*)"/.exec(xml)?.[1];
  if (version === undefined || (platform !== "Camunda Cloud" && platform !== "Camunda Platform")) {
    throw new Error('declares no modeler:executionPlatform ("Camunda Cloud" or "Camunda Platform") and modeler:executionPlatformVersion');
  }
  return { type: platform === "Camunda Cloud" ? "cloud" : "platform", version };
}

const lint = async (xml: string): Promise<LintReport[]> => (await camundaLinter(platformOf(xml).type)).lint(xml);
const describeReports = (reports: LintReport[]) => reports.map((r) => `${r.category} ${r.id}: ${r.message} (${r.rule})`).join("\n");

/**
 * The BPMN examples pass the Modelers' own lint (`@camunda/linting`: bpmnlint's correctness rules
 * and Camunda's rules for the engine version each model names); any error fails.
 */
describe("BPMN examples pass the Camunda linter", function () {
  this.timeout(60_000);

  it("finds the examples of both engines", () => {
    expect(models).to.include.members(["camunda7/api-request-example.bpmn", "zeebe/api-request-example.bpmn"]);
  });

  for (const file of models) {
    it(`${file}: no error`, async () => {
      const reports = await lint(readFileSync(join(BPMN_DIR, file), "utf8"));
      // "rule-error": a rule that broke on the model, which checks nothing either.
      expect(reports.filter((r) => r.category === "error" || r.category === "rule-error"), describeReports(reports)).to.deep.equal([]);
    });

    // Each model broken on purpose: the linter must say so, or it checked nothing.
    it(`${file}: the linter does check it (a second blank start event is an error)`, async () => {
      const xml = readFileSync(join(BPMN_DIR, file), "utf8");
      const broken = xml.replace(/(<bpmn:process [^>]*>)/, '$1<bpmn:startEvent id="SecondStart" />');
      expect(broken).to.not.equal(xml);
      const reports = await lint(broken);
      expect(reports.filter((r) => r.category === "error").map((r) => r.rule), describeReports(reports)).to.include("single-blank-start-event");
    });

    it(`${file}: the linter applies Camunda's rules of its engine version`, async () => {
      const xml = readFileSync(join(BPMN_DIR, file), "utf8");
      const { type } = platformOf(xml);
      // Zeebe: a service task needs its job type; Camunda 7: a process should say how long its history is kept.
      const [broken, rule] =
        type === "cloud"
          ? [xml.replace(/<zeebe:taskDefinition [^>]*\/>/g, ""), "camunda-compat/implementation"]
          : [xml.replace(/ camunda:historyTimeToLive="[^"]*"/g, ""), "camunda-compat/history-time-to-live"];
      expect(broken).to.not.equal(xml);
      const reports = await lint(broken);
      expect(reports.map((r) => r.rule), describeReports(reports)).to.include(rule);
    });
  }

  it("a model that names no engine is refused (the linter would check nothing)", () => {
    expect(() => platformOf('<bpmn:definitions id="D"></bpmn:definitions>')).to.throw(/executionPlatform/);
  });
});
