import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadSync, type MessageTypeDefinition, type MethodDefinition } from "@grpc/proto-loader";
import { expect } from "chai";
import * as stringifyVariables from "@camunda8/sdk/dist/zeebe/lib/stringifyVariables.js";
import { parseJobPayload, SDK_PRIVATE_MEMBERS, ZEEBE_PROTO_PATH } from "../../workers/zeebe/sdk-adapter.js";
import { ROOT } from "../support/process.js";

/**
 * What the Zeebe worker relies on in @camunda8/sdk beyond its public API (workers/zeebe/sdk-adapter.ts):
 * each check names the member, so an SDK upgrade that changes one fails here, not in production.
 */
describe("Zeebe SDK adapter: the private members of @camunda8/sdk it relies on", () => {
  const member = (name: string) => `@camunda8/sdk private member ${name} (workers/zeebe/sdk-adapter.ts)`;

  it("the SDK is pinned to one exact version, the one installed", () => {
    const wanted = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> }).dependencies["@camunda8/sdk"];
    expect(wanted, "@camunda8/sdk must be pinned exactly (no range): the adapter uses its private members").to.match(/^\d+\.\d+\.\d+$/);
    const installed = (JSON.parse(readFileSync(join(ROOT, "node_modules/@camunda8/sdk/package.json"), "utf8")) as { version: string }).version;
    expect(installed, "@camunda8/sdk installed").to.equal(wanted);
  });

  it(`the gateway protocol ${SDK_PRIVATE_MEMBERS.proto.file}: the service, each call the worker makes with the request fields it sets, the job fields it reads`, () => {
    const { file, service, calls, job } = SDK_PRIVATE_MEMBERS.proto;
    expect(existsSync(ZEEBE_PROTO_PATH), member(file)).to.equal(true);
    const definition = loadSync(ZEEBE_PROTO_PATH, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
    const gateway = definition[service] as Record<string, MethodDefinition<object, object>> | undefined;
    expect(gateway, member(`${file} service ${service}`)).to.be.an("object");
    const fieldsOf = (type: MessageTypeDefinition<object, object>) => (type.type as { field: { name: string }[] }).field.map((f) => f.name);
    for (const [call, fields] of Object.entries(calls)) {
      const method = gateway![call];
      expect(method, member(`${file} ${service}.${call}`)).to.be.an("object");
      const missing = fields.filter((f) => !fieldsOf(method!.requestType).includes(f));
      expect(missing, member(`${file} ${service}.${call} request fields`)).to.deep.equal([]);
    }
    const activated = definition[job.message] as MessageTypeDefinition<object, object> | undefined;
    expect(activated, member(`${file} ${job.message}`)).to.be.an("object");
    expect(job.fields.filter((f) => !fieldsOf(activated!).includes(f)), member(`${file} ${job.message} fields`)).to.deep.equal([]);
  });

  it(`${SDK_PRIVATE_MEMBERS.parseVariables.module} ${SDK_PRIVATE_MEMBERS.parseVariables.export}: parses a job's variables and headers, refuses an int64 a number cannot hold`, () => {
    const { module, export: name } = SDK_PRIVATE_MEMBERS.parseVariables;
    expect(typeof (stringifyVariables as Record<string, unknown>)[name], member(`${module} ${name}`)).to.equal("function");
    const parsed = parseJobPayload({ variables: '{"tenantId":"t1","queryParameters":{"publicId":"AGR-1"},"n":12.5}', customHeaders: '{"retryBackoff":"PT3S"}' });
    expect({ ...parsed.variables }, member(`${module} ${name}: variables`)).to.deep.equal({ tenantId: "t1", queryParameters: { publicId: "AGR-1" }, n: 12.5 });
    expect({ ...parsed.customHeaders }, member(`${module} ${name}: custom headers`)).to.deep.equal({ retryBackoff: "PT3S" });
    expect(() => parseJobPayload({ variables: '{"n":9007199254740993}', customHeaders: "{}" }), member(`${module} ${name}: an unsafe int64 refused`)).to.throw();
    expect(() => parseJobPayload({ variables: "{not json", customHeaders: "{}" }), member(`${module} ${name}: text that is not JSON refused`)).to.throw();
  });
});
