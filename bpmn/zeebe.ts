/**
 * Tries the workers on your own Camunda 8 (SaaS or Self-Managed, under its own licence): deploys
 * the example models and starts instances of them through `@camunda8/sdk`. The connection comes
 * from the SDK's own environment variables (ZEEBE_GRPC_ADDRESS, ZEEBE_CLIENT_ID,
 * ZEEBE_CLIENT_SECRET, CAMUNDA_OAUTH_URL, ZEEBE_TOKEN_AUDIENCE, CAMUNDA_AUTH_STRATEGY …, as a SaaS
 * API client's credentials file sets them); this script reads none itself.
 *
 *   npm run zeebe:deploy                                   # deploys bpmn/zeebe/*.bpmn
 *   npm run zeebe:start -- api-request ['{"tenantId":"demo",…}']
 *   npm run zeebe:start -- calculate-series ['{"tenantId":"demo",…}']
 *
 * `zeebe:start` waits for the instance to end (30 s at most) and prints its variables: the result
 * and the `outcome` its end event set. The variables given are merged over the defaults below (the
 * demo data of `npm run demo`).
 */
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Camunda8 } from "@camunda8/sdk";
import type { JSONDoc } from "@camunda8/sdk/dist/zeebe/types.js";

/** bpmn/zeebe, seen from the compiled script (dist/bpmn/zeebe.js). */
const MODELS = join(dirname(fileURLToPath(import.meta.url)), "../../bpmn/zeebe");

/** The example process of each job type, and variables that work on the demo data. */
const EXAMPLES: Record<string, { bpmnProcessId: string; variables: JSONDoc }> = {
  "api-request": {
    bpmnProcessId: "api-request-example-zeebe",
    variables: { apiDefinitionExternalId: "agreement-access-points", tenantId: "demo", queryParameters: { publicId: "AGR-1001" } },
  },
  "calculate-series": {
    bpmnProcessId: "calculate-series-example-zeebe",
    variables: { calculationDefinitionExternalId: "site-net-consumption", tenantId: "demo", threshold: 10 },
  },
};

async function deploy(zeebe: ReturnType<Camunda8["getZeebeGrpcApiClient"]>): Promise<void> {
  const models = readdirSync(MODELS).filter((f) => f.endsWith(".bpmn"));
  for (const model of models) {
    const deployed = await zeebe.deployResource({ processFilename: join(MODELS, model) });
    for (const { process } of deployed.deployments.filter((d): d is Extract<typeof d, { process: unknown }> => "process" in d)) {
      console.log(`${model}: process ${process.bpmnProcessId} version ${process.version} (key ${process.processDefinitionKey})`);
    }
  }
}

async function startInstance(zeebe: ReturnType<Camunda8["getZeebeGrpcApiClient"]>, jobType: string | undefined, given: string | undefined): Promise<void> {
  const example = jobType === undefined ? undefined : EXAMPLES[jobType];
  if (example === undefined) throw new Error(`name a job type: ${Object.keys(EXAMPLES).join(" or ")}`);
  const variables: JSONDoc = { ...example.variables, ...(given === undefined ? {} : (JSON.parse(given) as JSONDoc)) };
  const result = await zeebe.createProcessInstanceWithResult({ bpmnProcessId: example.bpmnProcessId, variables, requestTimeout: 30_000 });
  console.log(JSON.stringify({ processInstanceKey: result.processInstanceKey, variables: result.variables }, null, 2));
}

async function main(): Promise<void> {
  const [command, jobType, variables] = process.argv.slice(2);
  const zeebe = new Camunda8().getZeebeGrpcApiClient();
  try {
    if (command === "deploy") await deploy(zeebe);
    else if (command === "start") await startInstance(zeebe, jobType, variables);
    else throw new Error("usage: zeebe.js deploy | start <api-request|calculate-series> [variables as JSON]");
  } finally {
    await zeebe.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
