import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import { expect } from "chai";
import { problemCodes } from "../src/errors.js";
import { parseRetryBackoff } from "../src/tasks/retry-backoff.js";
import { ROOT } from "./support/process.js";

const read = (file: string) => JSON.parse(readFileSync(join(ROOT, file), "utf8")) as Template;
const schemas = {
  camunda7: read("node_modules/@camunda/element-templates-json-schema/resources/schema.json"),
  camunda8: read("node_modules/@camunda/zeebe-element-templates-json-schema/resources/schema.json"),
};
/** What each task reads (src/tasks/tasks.ts). */
const VARIABLES: Record<string, string[]> = {
  "api-request": ["apiDefinitionExternalId", "queryParameters", "tenantId", "userId", "resultVariable"],
  "calculate-series": ["calculationDefinitionExternalId", "itemId", "inputs", "eventDateRange", "queryOptions", "tenantId", "resultVariable"],
};
/** The groups of the Modeler's properties panel, as connectors' templates name them. */
const GROUPS = { camunda7: ["input", "output", "error"], camunda8: ["input", "output", "error", "retries"] };
/** The codes a task throws as BPMN errors (contract §6): every 4xx code. */
const BPMN_ERROR_CODES = Object.entries(problemCodes)
  .filter(([, { status }]) => status >= 400 && status < 500)
  .map(([code]) => code)
  .sort();

interface Property {
  id?: string;
  type: string;
  value?: string;
  group?: string;
  optional?: boolean;
  editable?: boolean;
  binding: { type: string; name?: string; property?: string; key?: string; source?: string };
  constraints?: { notEmpty?: boolean; pattern?: { value: string } };
}
interface Template {
  engines?: { camunda?: string };
  groups?: { id: string }[];
  properties: Property[];
}

describe("Modeler element templates", () => {
  for (const [engine, topic] of [
    ["camunda7", "api-request"],
    ["camunda7", "calculate-series"],
    ["camunda8", "api-request"],
    ["camunda8", "calculate-series"],
  ] as const) {
    const template = read(`bpmn/element-templates/${engine}-${topic}.json`);
    const properties = template.properties;
    const inputs = properties.filter((p) => p.binding.type === "camunda:inputParameter" || p.binding.type === "zeebe:input");

    it(`${engine} ${topic}: valid against the Modeler's schema, bound to the topic and to variables the task reads`, () => {
      const ajv = new Ajv({ strict: false, allErrors: true });
      const validate = ajv.compile(schemas[engine]);
      expect(validate(template), JSON.stringify(validate.errors)).to.equal(true);
      const topicBinding = properties.find((p) => p.binding.name === "camunda:topic" || (p.binding.type === "zeebe:taskDefinition" && p.binding.property === "type"));
      expect(topicBinding?.value).to.equal(topic);
      const names = inputs.map((p) => p.binding.name!);
      expect(names.every((name) => VARIABLES[topic]!.includes(name)), names.join(",")).to.equal(true);
      expect(names).to.include(topic === "api-request" ? "apiDefinitionExternalId" : "calculationDefinitionExternalId");
    });

    it(`${engine} ${topic}: every field in a group (${GROUPS[engine].join(", ")}), the BPMN error codes listed under error handling`, () => {
      expect(template.groups?.map((g) => g.id)).to.deep.equal(GROUPS[engine]);
      const ungrouped = properties.filter((p) => p.type !== "Hidden" && (p.group === undefined || !GROUPS[engine].includes(p.group)));
      expect(ungrouped.map((p) => p.binding)).to.deep.equal([]);
      const errors = properties.filter((p) => p.group === "error");
      expect(errors.map((p) => [p.binding.name, p.editable])).to.deep.equal([["bpmnErrorCodes", false]]);
      expect(errors[0]!.value!.split(/[\s,]+/).sort()).to.deep.equal(BPMN_ERROR_CODES);
    });

    if (engine === "camunda7") {
      it(`${engine} ${topic}: the result variable is the task's resultVariable input`, () => {
        const result = inputs.find((p) => p.binding.name === "resultVariable");
        expect(result).to.include({ group: "output", value: "result" });
      });
      continue;
    }

    it(`${engine} ${topic}: the result reaches the process through an output mapping of the task's own result variable`, () => {
      // The task always writes `result` (whatever variable the instance holds by that name) …
      expect(inputs.filter((p) => p.binding.name === "resultVariable").map((p) => [p.type, p.value])).to.deep.equal([["Hidden", "result"]]);
      // … and the mapping copies it to the variable the modeler names.
      const outputs = properties.filter((p) => p.binding.type === "zeebe:output");
      expect(outputs.map((p) => [p.id, p.group, p.binding.source, p.value])).to.deep.equal([["resultVariable", "output", "=result", "result"]]);
    });

    it(`${engine} ${topic}: retries on the job, the retryBackoff task header the worker reads, for Camunda 8.5 and later`, () => {
      const retries = properties.find((p) => p.binding.type === "zeebe:taskDefinition" && p.binding.property === "retries");
      expect(retries).to.include({ group: "retries", value: "3" });
      const backoff = properties.find((p) => p.binding.type === "zeebe:taskHeader");
      expect(backoff?.binding.key).to.equal("retryBackoff");
      expect(backoff).to.include({ group: "retries", optional: true });
      // The Modeler's check of the field accepts what the worker honours, and refuses what it would not.
      const pattern = new RegExp(backoff!.constraints!.pattern!.value);
      for (const value of ["", "PT3S", "PT0S", "PT0.5S", "PT1M30S", "PT2H", "P1D", "P1DT2H", "P2W", "P1W2DT3H4M5.5S"]) {
        expect(pattern.test(value), value).to.equal(true);
        expect(parseRetryBackoff(value).kind, value).to.be.oneOf(value === "" ? ["default"] : ["fixed"]);
      }
      for (const value of ["PT", "P", "3s", "PT3", "P1M", "P1Y", "-PT3S", "PT-3S", "pt3s", "PT3S "]) expect(pattern.test(value), value).to.equal(false);
      // UpdateJobTimeout (the job timeout extended while a task runs) and job streaming came with 8.5.
      expect(template.engines).to.deep.equal({ camunda: "^8.5" });
    });
  }
});
