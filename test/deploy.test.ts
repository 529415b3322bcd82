import { builtinModules } from "node:module";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { SETTING_GROUPS } from "../src/config/load.js";
import { REPOSITORY } from "./support/tiers.js";

/** The parts of dist/ the image and a production install keep (Containerfile: `COPY --from=build`). */
const SHIPPED = ["dist/src", "dist/workers", "dist/console"];

interface PackageJson {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  scripts: Record<string, string>;
}
const pkg = JSON.parse(readFileSync(join(REPOSITORY, "package.json"), "utf8")) as PackageJson;

/** Every .js file under `dir` (a path from the repository), as paths from the repository. */
function jsFiles(dir: string): string[] {
  return readdirSync(join(REPOSITORY, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".js") || file.endsWith(".mjs"))
    .map((file) => relative(REPOSITORY, join(REPOSITORY, dir, file)).split(sep).join("/"));
}

/** The module specifiers a compiled file loads: static and dynamic imports, re-exports, require(). */
function specifiers(file: string): string[] {
  const source = readFileSync(join(REPOSITORY, file), "utf8");
  const found: string[] = [];
  const patterns = [/^\s*(?:import|export)\b[^"';]*?\bfrom\s*["']([^"']+)["']/gm, /^\s*import\s*["']([^"']+)["']/gm, /\b(?:import|require)\s*\(\s*["']([^"']+)["']\s*\)/g];
  for (const pattern of patterns) for (const [, specifier] of source.matchAll(pattern)) found.push(specifier!);
  return found;
}

/** The npm package a bare specifier names (`@scope/name/sub` → `@scope/name`), or undefined for a built-in or a path. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:")) return undefined;
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
  return builtinModules.includes(name) ? undefined : name;
}

describe("the production artefact", () => {
  it("the built service loads only production dependencies, and only files the image ships", () => {
    expect(existsSync(join(REPOSITORY, "dist/src/main.js")), "run tsc first").to.equal(true);
    const files = [...SHIPPED.filter((dir) => dir !== "dist/console").flatMap(jsFiles), "scripts/run-built.mjs"];
    const packages = new Set<string>();
    const outside: string[] = [];
    for (const file of files) {
      for (const specifier of specifiers(file)) {
        const name = packageOf(specifier);
        if (name !== undefined) packages.add(name);
        else if (specifier.startsWith(".")) {
          const target = join(dirname(file), specifier).split(sep).join("/");
          if (!SHIPPED.some((dir) => target.startsWith(`${dir}/`))) outside.push(`${file} → ${specifier}`);
        }
      }
    }
    // The scan sees the service's own packages (a scan that found nothing would pass anything).
    expect([...packages]).to.include.members(["fastify", "knex", "pg", "jose", "@electric-sql/pglite", "@camunda8/sdk"]);
    expect([...packages].filter((name) => pkg.dependencies[name] === undefined).sort(), "loaded at run time but not in dependencies").to.deep.equal([]);
    expect(outside, "loads a file the image does not ship").to.deep.equal([]);
  });

  it("npm start, npm run worker and npm run demo run dist/ only, and never build", () => {
    for (const [script, entry] of [["start", "src/main.js"], ["worker", "src/worker.js"], ["demo", "src/demo.js"]] as const) {
      expect(pkg.scripts[script]).to.equal(`node scripts/run-built.mjs ${entry}`);
      expect(pkg.scripts[`pre${script}`], `pre${script}`).to.equal(undefined);
      expect(existsSync(join(REPOSITORY, "dist", entry)), entry).to.equal(true);
    }
    expect(pkg.scripts.build).to.equal("tsc -p . && npm run --silent build:console");
  });
});

describe("Containerfile", () => {
  const text = readFileSync(join(REPOSITORY, "Containerfile"), "utf8");
  const instructions = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .filter((line) => /^[A-Z]+\s/.test(line));
  const of = (name: string) => instructions.filter((line) => line.startsWith(`${name} `));

  it("builds in one stage and runs production dependencies and dist/ only in another, as a non-root user", () => {
    expect(of("FROM")).to.have.lengthOf(2);
    expect(of("FROM")[0]).to.match(/ AS build$/);
    const build = instructions.slice(0, instructions.indexOf(of("FROM")[1]!)).join("\n");
    expect(build).to.include("npm ci").and.include("npm run build").and.include("npm prune --omit=dev");
    // COPY --from=build SOURCE... DESTINATION
    const copied = of("COPY")
      .filter((line) => line.includes("--from=build"))
      .flatMap((line) => line.split(/\s+/).slice(2, -1));
    expect(copied).to.have.members(["/src/package.json", "/src/package-lock.json", "/src/node_modules", ...SHIPPED.map((dir) => `/src/${dir}`)]);
    expect(of("USER")).to.deep.equal(["USER app"]);
    expect(of("ENTRYPOINT")[0]).to.include("/app/node_modules/node/bin/node");
  });

  it("builds on the Node 24 of package-lock.json", () => {
    const lock = JSON.parse(readFileSync(join(REPOSITORY, "package-lock.json"), "utf8")) as { packages: Record<string, { version: string }> };
    expect(text).to.include(`ARG NODE_VERSION=${lock.packages["node_modules/node"]!.version}\n`);
    expect(lock.packages["node_modules/node"]!.version).to.match(/^24\./);
  });

  it("checks /health, keeps DATA_DIR in a volume and exposes PORT", () => {
    expect(of("HEALTHCHECK")).to.have.lengthOf(1);
    expect(of("HEALTHCHECK")[0]).to.include("/health");
    expect(text).to.match(/DATA_DIR=\/data/);
    expect(of("VOLUME")).to.deep.equal(['VOLUME ["/data"]']);
    expect(text).to.match(/PORT=3000/);
    expect(of("EXPOSE")).to.deep.equal(["EXPOSE 3000"]);
  });
});

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  profiles?: string[];
  volumes?: string[];
}

describe("compose.yaml", () => {
  const compose = parse(readFileSync(join(REPOSITORY, "compose.yaml"), "utf8"), { merge: true }) as {
    services: Record<string, ComposeService>;
    volumes: Record<string, unknown>;
  };
  const { services } = compose;
  const ours = ["api", "worker-camunda7", "worker-zeebe"];
  const settings = new Set(SETTING_GROUPS.flatMap((group) => Object.values(group.settings).flatMap((s) => [s.env, ...(s.aliases ?? []).map((a) => a.env)])));

  it("has the service, its workers and PostgreSQL, with its data in a named volume", () => {
    expect(Object.keys(services)).to.have.members(["postgres", ...ours]);
    expect(services.postgres!.image).to.match(/postgres:\d+/);
    expect(services.postgres!.healthcheck!.test).to.include("pg_isready");
    expect(services.postgres!.volumes).to.deep.equal(["pgdata:/var/lib/postgresql/data"]);
    expect(Object.keys(compose.volumes)).to.deep.equal(["pgdata"]);
  });

  it("builds the Containerfile, waits for a healthy database, and runs the workers alone", () => {
    for (const name of ours) {
      const service = services[name]!;
      expect(service.build, name).to.deep.equal({ context: ".", dockerfile: "Containerfile" });
      expect(service.depends_on, name).to.deep.equal({ postgres: { condition: "service_healthy" } });
      expect(service.environment!.DATABASE_URL, name).to.match(/^postgres:\/\/app:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/app$/);
    }
    expect(services.api!.command).to.equal(undefined);
    expect(services.api!.ports).to.deep.equal(["3000:3000"]);
    expect(services["worker-camunda7"]!.command).to.deep.equal(["dist/src/worker.js"]);
    expect(services["worker-camunda7"]!.environment!.CAMUNDA_URL).to.be.a("string");
    expect(services["worker-zeebe"]!.command).to.deep.equal(["dist/src/worker.js"]);
    expect(services["worker-zeebe"]!.environment!.ZEEBE_ADDRESS).to.be.a("string");
  });

  it("sets only declared settings, every secret from the environment, none written in the file", () => {
    for (const name of ours) {
      const environment = services[name]!.environment!;
      expect(Object.keys(environment).filter((key) => !settings.has(key)), name).to.deep.equal([]);
      for (const [key, value] of Object.entries(environment)) expect(typeof value, `${name} ${key}`).to.equal("string");
    }
    expect(services.api!.environment!.JWT_SECRET).to.match(/^\$\{JWT_SECRET:\?/);
    expect(services.postgres!.environment!.POSTGRES_PASSWORD).to.match(/^\$\{POSTGRES_PASSWORD:\?/);
  });
});

describe("systemd unit", () => {
  const unit = readFileSync(join(REPOSITORY, "deploy/process-task-backend@.service"), "utf8");
  const directive = (name: string) => [...unit.matchAll(new RegExp(`^${name}=(.*)$`, "gm"))].map((m) => m[1]);

  it("runs an entry of dist/ on Node 24 from node_modules, as its own user, stopped by SIGTERM", () => {
    expect(directive("ExecStart")).to.deep.equal(["/opt/process-task-backend/node_modules/node/bin/node dist/src/%i.js"]);
    expect(directive("WorkingDirectory")).to.deep.equal(["/opt/process-task-backend"]);
    expect(directive("User")).to.deep.equal(["process-task-backend"]);
    expect(directive("KillSignal")).to.deep.equal(["SIGTERM"]);
    expect(directive("EnvironmentFile")).to.deep.equal(["/etc/process-task-backend/%i.env"]);
    expect(directive("StateDirectory")).to.deep.equal(["process-task-backend"]);
  });
});
