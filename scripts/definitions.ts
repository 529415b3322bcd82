// `npm run definitions -- export|diff|apply DIR [--prune] [--url URL] [--token TOKEN] [--tenant TENANT]`:
// a tenant's API and Calculation Definitions as files (docs/how-to/definitions-as-code.md).
// Exit codes: 0 nothing to change, or applied; 2 (diff) changes pending; 1 an error.
import { parseArgs } from "node:util";
import { apply, CommandError, describe, plan, readFolder, readService, writeFolder, type Target } from "./definitions-code.js";

const USAGE = `usage: npm run definitions -- export|diff|apply DIR [--prune] [--url URL] [--token TOKEN] [--tenant TENANT]
  export  write each definition of the tenant as DIR/api/<externalId>.yaml or DIR/calculation/<externalId>.yaml
  diff    show what apply would change; exit code 2 when something would
  apply   create, update (and with --prune delete) so that the service holds what DIR holds
  --url     the service (default $DEFINITIONS_URL, else http://localhost:3000)
  --token   a bearer token with the admin role (default $DEFINITIONS_TOKEN)
  --tenant  the tenant, sent as X-TENANT-ID (default $DEFINITIONS_TENANT)
  --prune   diff and apply: also delete the definitions DIR lacks`;

/** Exit code of `diff` when applying would change something. */
const CHANGES_PENDING = 2;

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { url: { type: "string" }, token: { type: "string" }, tenant: { type: "string" }, prune: { type: "boolean", default: false }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [command, dir, ...rest] = positionals;
  if (!["export", "diff", "apply"].includes(command ?? "") || dir === undefined || rest.length > 0) throw new CommandError(USAGE);
  const tenant = values.tenant ?? env.DEFINITIONS_TENANT;
  if (tenant === undefined || tenant === "") throw new CommandError("a tenant is required: --tenant TENANT or DEFINITIONS_TENANT");
  const target: Target = { url: values.url ?? env.DEFINITIONS_URL ?? "http://localhost:3000", token: values.token ?? env.DEFINITIONS_TOKEN, tenant };
  const out = (line: string) => process.stdout.write(`${line}\n`);

  const service = await readService(target);
  if (command === "export") {
    const { written, removed } = writeFolder(dir, service);
    out(`exported ${written} definition(s) of tenant ${tenant} to ${dir}${removed.length > 0 ? `; removed ${removed.join(", ")}` : ""}`);
    return 0;
  }
  const { changes, kept } = plan(readFolder(dir), service, values.prune);
  for (const change of command === "diff" ? changes : []) out(describe(change));
  if (kept.length > 0) out(`not in ${dir}, kept (--prune deletes them): ${kept.join(", ")}`);
  const count = (action: string) => changes.filter((c) => c.action === action).length;
  const counts = (done: boolean) => ["create", "update", "delete"].map((a) => (done ? `${count(a)} ${a}d` : `${count(a)} to ${a}`)).join(", ");
  if (command === "diff") {
    out(changes.length === 0 ? "no changes" : counts(false));
    return changes.length === 0 ? 0 : CHANGES_PENDING;
  }
  await apply(target, changes, out);
  out(changes.length === 0 ? "no changes" : `applied: ${counts(true)}`);
  return 0;
}

main(process.argv.slice(2), process.env).then(
  (code) => process.exit(code),
  (err: unknown) => {
    // A bad option (parseArgs) or a failed call: its message; anything else is a bug, with its stack.
    const known = err instanceof CommandError || (err instanceof Error && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"));
    process.stderr.write(`${known ? (err as Error).message : String((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  },
);
