/**
 * Everything the Zeebe worker takes from `@camunda8/sdk` that is not its public API, in one place.
 * The SDK is pinned exactly in package.json; test/workers/zeebe-sdk-adapter.test.ts fails, naming
 * the member, when one of {@link SDK_PRIVATE_MEMBERS} changes or disappears.
 *
 * Public and used elsewhere: `Camunda8`, `Auth.*Provider` (the token or credentials of each call).
 * Not public, used here only:
 * - the gateway protocol the SDK ships (`dist/proto/zeebe.proto`): the worker's gRPC client is
 *   made from it (gateway-client.ts), since the SDK's own has gzip hard-coded on its channel;
 * - `parseVariablesAndCustomHeadersToJSON` (`dist/zeebe/lib/stringifyVariables.js`): reads a job's
 *   variables and headers as the SDK's job workers do, refusing an int64 that a JavaScript number
 *   cannot hold rather than rounding it.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Auth, LosslessDto } from "@camunda8/sdk";
import { parseVariablesAndCustomHeadersToJSON } from "@camunda8/sdk/dist/zeebe/lib/stringifyVariables.js";

const require = createRequire(import.meta.url);

/** The SDK's folder (where its package.json is). */
const SDK_ROOT = dirname(require.resolve("@camunda8/sdk/package.json"));

/** The gateway protocol (`gateway_protocol.Gateway`) as the SDK ships it. */
export const ZEEBE_PROTO_PATH = join(SDK_ROOT, "dist/proto/zeebe.proto");

/** The private members relied on, each with how the test checks it (test/workers/zeebe-sdk-adapter.test.ts). */
export const SDK_PRIVATE_MEMBERS = {
  /** The file, with the service, the calls the worker makes and the fields of their requests it sets, and the fields of a job it reads. */
  proto: {
    file: "dist/proto/zeebe.proto",
    service: "gateway_protocol.Gateway",
    calls: {
      ActivateJobs: ["type", "worker", "timeout", "maxJobsToActivate", "fetchVariable", "requestTimeout", "tenantIds"],
      StreamActivatedJobs: ["type", "worker", "timeout", "fetchVariable", "tenantIds"],
      CompleteJob: ["jobKey", "variables"],
      FailJob: ["jobKey", "retries", "errorMessage", "retryBackOff", "variables"],
      ThrowError: ["jobKey", "errorCode", "errorMessage", "variables"],
      UpdateJobTimeout: ["jobKey", "timeout"],
      Topology: [],
    },
    job: { message: "gateway_protocol.ActivatedJob", fields: ["key", "retries", "deadline", "variables", "customHeaders", "tenantId"] },
  },
  /** The function, taking (job, variablesDto, headersDto) and answering the job with both parsed. */
  parseVariables: { module: "@camunda8/sdk/dist/zeebe/lib/stringifyVariables.js", export: "parseVariablesAndCustomHeadersToJSON" },
} as const;

/** A job's variables and custom headers, parsed from the JSON text the gateway sends, as the SDK parses them. */
export function parseJobPayload(job: { variables: string; customHeaders: string }): { variables: Record<string, unknown>; customHeaders: Record<string, unknown> } {
  const parsed = parseVariablesAndCustomHeadersToJSON(job as never, LosslessDto, LosslessDto) as unknown as { variables: Record<string, unknown>; customHeaders: Record<string, unknown> };
  return { variables: parsed.variables, customHeaders: parsed.customHeaders };
}

/** What adds a call's credentials: the SDK's provider for the strategy (its token cache and renewal included). */
export interface HeadersProvider {
  getHeaders(audience: "ZEEBE"): Promise<Record<string, string>>;
}

/** The SDK's public provider of the configured strategy, given the SDK's settings ({@link sdkConfiguration} in worker.ts); none for NONE. */
export function authProvider(strategy: "NONE" | "OAUTH" | "BASIC" | "BEARER", config: Record<string, string | boolean>): HeadersProvider | undefined {
  const options = { config: config as never };
  if (strategy === "OAUTH") return new Auth.OAuthProvider(options) as unknown as HeadersProvider;
  if (strategy === "BASIC") return new Auth.BasicAuthProvider(options) as unknown as HeadersProvider;
  if (strategy === "BEARER") return new Auth.BearerAuthProvider(options) as unknown as HeadersProvider;
  return undefined;
}
