import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { validate, compileErrors } from "@readme/openapi-parser";
import { expect } from "chai";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { CALCULATION_TYPES } from "../../src/calculation/definition.js";
import { REDUCE_TYPES } from "../../src/calculation/reduce.js";
import { INTERVALS } from "../../src/timeseries/buckets.js";
import { ALGORITHMS } from "../../src/timeseries/interpolation.js";
import { PERIODS } from "../../src/timeseries/periods.js";
import { METRICS } from "../../src/timeseries/query.js";
import { backend } from "../support/backends.js";
import { testServer } from "../support/server.js";

/**
 * The description at /openapi.json: valid by a real OpenAPI validator, complete (operationIds,
 * parameters, problem+json errors, bodies, answers), and good enough that a client generated from
 * it with openapi-typescript type-checks a call of the request endpoint, and refuses a wrong one.
 */

type Json = Record<string, unknown>;
interface Operation {
  operationId?: string;
  security?: unknown;
  parameters?: { name: string; in: string; required?: boolean; schema?: Json }[];
  requestBody?: { content: Record<string, { schema?: Json }> };
  responses: Record<string, { content?: Record<string, { schema?: Json }> }>;
}
interface Description {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json>; securitySchemes: Record<string, Json> };
}

const PUBLIC = ["/health", "/ready", "/metrics", "/console"];
const here = dirname(fileURLToPath(import.meta.url));

export async function describeService(): Promise<Description> {
  const server = await testServer(await backend("embedded"));
  try {
    const res = await server.app.inject({ method: "GET", url: "/openapi.json" });
    expect(res.statusCode).to.equal(200);
    return res.json() as Description;
  } finally {
    await server.app.close();
  }
}

function operations(doc: Description): [string, string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => [method, path, op] as [string, string, Operation]));
}

/** Type-checks files in a folder of dist/ (so node_modules resolves), returning each diagnostic as "file:line: message". */
function typeCheck(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
    types: [],
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file !== undefined && d.start !== undefined ? `${d.file.fileName.split("/").pop()}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : "";
    return where + ts.flattenDiagnosticMessageText(d.messageText, "\n");
  });
}

const REQUEST = "/task-backend/tasks/{segment}/api/request";

/** A typed call of the request endpoint, and wrong calls each marked as an expected error. */
const CLIENT = `
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const client = createClient<paths>({ baseUrl: "http://localhost:3000", headers: { authorization: "Bearer token" } });

export async function accessPoints(publicId: string): Promise<unknown> {
  const { data, error, response } = await client.POST("${REQUEST}", {
    params: { path: { segment: "demo" }, header: { "x-tenant-id": "demo" } },
    body: { apiDefinitionExternalId: "agreement-access-points", queryParameters: { publicId } },
  });
  if (error !== undefined) {
    const problem: { code: string; status: number; detail: string; errors?: { message: string }[] } = error;
    throw new Error(problem.code + " " + problem.detail + " " + response.status);
  }
  return data;
}

export async function wrongCalls(): Promise<void> {
  // @ts-expect-error the body lacks apiDefinitionExternalId
  await client.POST("${REQUEST}", { params: { path: { segment: "demo" }, header: { "x-tenant-id": "demo" } }, body: { queryParameters: {} } });
  // @ts-expect-error the tenant header is required
  await client.POST("${REQUEST}", { params: { path: { segment: "demo" } }, body: { apiDefinitionExternalId: "x" } });
  // @ts-expect-error apiDefinitionExternalId is a string
  await client.POST("${REQUEST}", { params: { path: { segment: "demo" }, header: { "x-tenant-id": "demo" } }, body: { apiDefinitionExternalId: 5 } });
  // @ts-expect-error the request endpoint is a POST
  await client.GET("${REQUEST}", { params: { path: { segment: "demo" }, header: { "x-tenant-id": "demo" } } });
}

const QUERY = "/items/{itemId}/events/query";
const header = { "x-tenant-id": "demo" };
const itemId = "6f1c2b9e-8d3a-4f5e-9a1b-2c3d4e5f6a7b";

export async function series(): Promise<unknown> {
  const { data } = await client.POST(QUERY, {
    params: { path: { itemId }, header },
    body: {
      eventDateRange: { period: "Custom range", from: "2026-01-01T00:00:00Z", to: "2026-02-01T00:00:00Z", timeZone: "Europe/Brussels" },
      queryOptions: {
        aggregation: { metric: "sum", interval: "Daily", gapStrategy: { type: "interpolate", config: { algorithm: "akimaSpline" } } },
        filter: { keyValues: [{ key: "site", operator: "or", values: ["A"] }], numberValues: [{ from: 0, toInclusive: true, to: 10 }] },
        sorting: { order: ["timestamp-"] },
        pagination: { limit: 100, offset: 0 },
      },
    },
  });
  return data;
}

export async function wrongSeries(): Promise<void> {
  // @ts-expect-error "summ" is not a metric
  await client.POST(QUERY, { params: { path: { itemId }, header }, body: { queryOptions: { aggregation: { metric: "summ", interval: "Daily" } } } });
  // @ts-expect-error "Fortnightly" is not an interval
  await client.POST(QUERY, { params: { path: { itemId }, header }, body: { queryOptions: { aggregation: { interval: "Fortnightly" } } } });
  // @ts-expect-error "Last decade" is not a period
  await client.POST(QUERY, { params: { path: { itemId }, header }, body: { eventDateRange: { period: "Last decade" } } });
  // @ts-expect-error "cubic" is not an interpolation algorithm
  await client.POST(QUERY, { params: { path: { itemId }, header }, body: { queryOptions: { aggregation: { interval: "Daily", gapStrategy: { type: "interpolate", config: { algorithm: "cubic" } } } } } });
  // @ts-expect-error "xor" is not a filter operator
  await client.POST(QUERY, { params: { path: { itemId }, header }, body: { queryOptions: { filter: { tags: { operator: "xor", values: ["a"] } } } } });
  // @ts-expect-error "SUM" is not a calculation type
  await client.POST("/calculation-definitions", { params: { header }, body: { externalId: "c", calculationType: "SUM", data: {} } });
  // @ts-expect-error "percentile99" is not a reduce type
  await client.POST("/calculation-definitions", { params: { header }, body: { externalId: "c", calculationType: "CALCULATION", data: { calculation: { scope: { a: { type: "REDUCE", reduce: { reduceType: "percentile99" } } } } } } });
}

export async function listed(): Promise<number> {
  const { data } = await client.GET("/calculation-definitions", { params: { header: { "x-tenant-id": "demo" }, query: { limit: 10 } } });
  return data === undefined ? 0 : data.total + data.calculationDefinitions.length;
}
`;

/** The same wrong call without the marker: the compiler must name what is wrong. */
const WRONG = `
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const client = createClient<paths>({ baseUrl: "http://localhost:3000" });
export const call = client.POST("${REQUEST}", { params: { path: { segment: "demo" }, header: { "x-tenant-id": "demo" } }, body: { apiDefinitionExternalID: "typo" } });
export const summ = client.POST("/timeline/query", { params: { header: { "x-tenant-id": "demo" } }, body: { queryOptions: { aggregation: { metric: "summ", interval: "Daily" } } } });
`;

describe("OpenAPI description", function () {
  this.timeout(120_000);
  let doc: Description;
  before(async () => {
    doc = await describeService();
  });

  it("is valid OpenAPI 3.1 by @readme/openapi-parser", async () => {
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? "" : compileErrors(result)).to.equal(true);
    expect(doc.openapi).to.equal("3.1.0");
  });

  it("names every operation with a unique operationId", () => {
    const ids = operations(doc).map(([method, path, op]) => op.operationId ?? `missing on ${method} ${path}`);
    expect(ids.filter((id) => id.startsWith("missing"))).to.deep.equal([]);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(ids.length).to.be.greaterThan(25);
  });

  it("leaves optional query parameters optional and requires X-TENANT-ID and a bearer token on every protected operation", () => {
    expect(doc.components.securitySchemes.bearerAuth).to.deep.equal({ type: "http", scheme: "bearer", bearerFormat: "JWT" });
    for (const [method, path, op] of operations(doc)) {
      const query = (op.parameters ?? []).filter((p) => p.in === "query");
      for (const name of ["limit", "offset", "partial", "active", "type"]) {
        const parameter = query.find((p) => p.name === name);
        if (parameter !== undefined) expect(parameter.required ?? false, `${method} ${path} ?${name}`).to.equal(false);
      }
      if (PUBLIC.includes(path)) {
        expect(op.security, path).to.equal(undefined);
        continue;
      }
      expect(op.security, `${method} ${path}`).to.deep.equal([{ bearerAuth: [] }]);
      const tenant = op.parameters?.find((p) => p.in === "header" && p.name.toLowerCase() === "x-tenant-id");
      // A stream may name its tenant in its first message instead (contract §10).
      const stream = path === "/items/{itemId}/stream" || path === "/streams";
      expect(tenant?.required ?? false, `${method} ${path} X-TENANT-ID`).to.equal(!stream);
    }
    const lists = ["/graph/entities", "/api-definitions", "/calculation-definitions"].map((path) => doc.paths[path]!.get!);
    for (const list of lists) expect(list.parameters?.filter((p) => p.in === "query").map((p) => p.name)).to.include.members(["limit", "offset"]);
  });

  it("declares every error as application/problem+json with the Problem schema", () => {
    expect(doc.components.schemas.Problem).to.deep.include({ type: "object", required: ["type", "title", "status", "code", "detail"] });
    expect(Object.keys(doc.components.schemas.Problem!.properties as Json)).to.have.members(["type", "title", "status", "code", "detail", "errors", "requestId"]);
    for (const [method, path, op] of operations(doc)) {
      const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
      expect(errors.length, `${method} ${path}`).to.be.greaterThan(0);
      for (const [status, response] of errors) {
        expect(Object.keys(response.content ?? {}), `${method} ${path} ${status}`).to.deep.equal(["application/problem+json"]);
        expect(response.content!["application/problem+json"]!.schema).to.deep.equal({ $ref: "#/components/schemas/Problem" });
      }
    }
  });

  it("gives every 200 and 201 a schema, and every 204 no content", () => {
    for (const [method, path, op] of operations(doc)) {
      // A WebSocket route's one success is the upgrade.
      const success = Object.entries(op.responses).filter(([status]) => status.startsWith("2") || status === "101");
      expect(success.length, `${method} ${path}`).to.equal(1);
      const [status, response] = success[0]!;
      if (status === "101") {
        expect(response.content, `${method} ${path}`).to.equal(undefined);
        expect(path).to.be.oneOf(["/items/{itemId}/stream", "/streams"]);
      } else if (status === "204") {
        expect(response.content, `${method} ${path}`).to.equal(undefined);
        expect(method).to.equal("delete");
      } else {
        const media = Object.values(response.content ?? {});
        expect(media.length, `${method} ${path} ${status}`).to.equal(1);
        expect(media[0]!.schema, `${method} ${path} ${status}`).to.be.an("object");
      }
    }
    expect(doc.paths["/api-definitions"]!.post!.responses).to.have.property("201");
    expect(doc.paths["/calculation-definitions"]!.post!.responses).to.have.property("201");
  });

  it("types the series and calculation bodies to the field, their enums those the services check", () => {
    const body = (path: string) => doc.paths[path]!.post!.requestBody!.content["application/json"]!.schema as Json;
    const options = (body("/timeline/query").properties as Record<string, Json>).queryOptions!;
    const aggregation = (options.properties as Record<string, Json>).aggregation!;
    const props = aggregation.properties as Record<string, Json>;
    expect(props.metric!.enum).to.deep.equal([...METRICS]);
    expect(props.interval!.enum).to.deep.equal([...INTERVALS]);
    expect(JSON.stringify(props.gapStrategy)).to.contain(JSON.stringify([...ALGORITHMS]));
    const range = (body("/items/{itemId}/events/query").properties as Record<string, Json>).eventDateRange!;
    expect((range.properties as Record<string, Json>).period!.enum).to.deep.equal([...PERIODS]);
    const filter = (options.properties as Record<string, Json>).filter!;
    expect(Object.keys(filter.properties as Json)).to.have.members(["tenantCodes", "keyValues", "entityReferences", "numberValues", "metaDates", "tags", "sourceIds", "itemIds"]);
    const calculation = body("/calculation-definitions").properties as Record<string, Json>;
    expect(calculation.calculationType!.enum).to.deep.equal([...CALCULATION_TYPES]);
    expect(JSON.stringify(calculation.data)).to.contain(JSON.stringify([...REDUCE_TYPES]));
    const timelines = JSON.stringify(body("/api-definitions"));
    expect(timelines).to.contain(JSON.stringify([...METRICS]));
  });

  it("is the file npm run openapi writes (docs/reference/openapi.json), current", async () => {
    const written = JSON.parse(await readFile(join(here, "..", "..", "..", "docs", "reference", "openapi.json"), "utf8")) as Description;
    expect(written, "run npm run openapi and commit docs/reference/openapi.json").to.deep.equal(doc);
  });

  it("declares the ingest bodies: JSON, NDJSON and CSV", () => {
    for (const path of ["/events", "/items/{itemId}/events"]) {
      const content = doc.paths[path]!.post!.requestBody!.content;
      expect(Object.keys(content), path).to.have.members(["application/json", "application/x-ndjson", "text/csv"]);
      expect(content["application/json"]!.schema).to.deep.include({ type: "object", required: ["events"] });
      expect(content["application/x-ndjson"]!.schema).to.deep.include({ type: "string" });
      expect(content["text/csv"]!.schema).to.deep.include({ type: "string" });
    }
  });

  it("generates a client (openapi-typescript + openapi-fetch) that type-checks a call of the request endpoint and refuses wrong ones", async () => {
    const folder = await mkdtemp(join(here, "openapi-client-"));
    try {
      await writeFile(join(folder, "schema.d.ts"), astToString(await openapiTS(doc as never)));
      await writeFile(join(folder, "client.ts"), CLIENT);
      await writeFile(join(folder, "wrong.ts"), WRONG);
      // Every @ts-expect-error in client.ts must meet an error, else tsc reports it unused.
      expect(typeCheck([join(folder, "client.ts")])).to.deep.equal([]);
      const wrong = typeCheck([join(folder, "wrong.ts")]);
      expect(wrong.length).to.be.greaterThan(0);
      expect(wrong.join("\n")).to.match(/^wrong\.ts:6: .*apiDefinitionExternalID/m);
      expect(wrong.join("\n")).to.match(/^wrong\.ts:7: .*"summ"/m);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
