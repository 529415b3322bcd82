import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import { expect } from "chai";
import { ROOT } from "./support/process.js";

const read = (file: string) => JSON.parse(readFileSync(join(ROOT, file), "utf8")) as Record<string, unknown>;
const schemas = {
  camunda7: read("node_modules/@camunda/element-templates-json-schema/resources/schema.json"),
  camunda8: read("node_modules/@camunda/zeebe-element-templates-json-schema/resources/schema.json"),
};
/** What each task reads (src/tasks/tasks.ts). */
const VARIABLES: Record<string, string[]> = {
  "api-request": ["apiDefinitionExternalId", "queryParameters", "tenantId", "userId", "resultVariable"],
  "calculate-series": ["calculationDefinitionExternalId", "itemId", "inputs", "eventDateRange", "queryOptions", "tenantId", "resultVariable"],
};

describe("Modeler element templates", () => {
  for (const [engine, topic] of [
    ["camunda7", "api-request"],
    ["camunda7", "calculate-series"],
    ["camunda8", "api-request"],
    ["camunda8", "calculate-series"],
  ] as const) {
    it(`${engine} ${topic}: valid against the Modeler's schema, bound to the topic and to variables the task reads`, () => {
      const template = read(`bpmn/element-templates/${engine}-${topic}.json`);
      const ajv = new Ajv({ strict: false, allErrors: true });
      const validate = ajv.compile(schemas[engine]);
      expect(validate(template), JSON.stringify(validate.errors)).to.equal(true);
      const properties = template.properties as { value?: string; binding: { type: string; name?: string; property?: string } }[];
      const topicBinding = properties.find((p) => p.binding.name === "camunda:topic" || p.binding.type === "zeebe:taskDefinition");
      expect(topicBinding?.value).to.equal(topic);
      const inputs = properties.filter((p) => p.binding.type === "camunda:inputParameter" || p.binding.type === "zeebe:input").map((p) => p.binding.name!);
      expect(inputs.every((name) => VARIABLES[topic]!.includes(name)), inputs.join(",")).to.equal(true);
      expect(inputs).to.include(topic === "api-request" ? "apiDefinitionExternalId" : "calculationDefinitionExternalId");
      expect(inputs).to.include("resultVariable");
    });
  }
});
