import { build, type Rollup } from "vite";
import { ROOT } from "./process.js";

/** One finding of the Camunda linter, as the Modelers show it. */
export interface LintReport {
  id: string;
  message: string;
  category: "error" | "warn" | "info" | "rule-error";
  rule: string;
  executionPlatform: string;
  executionPlatformVersion: string;
}

interface CamundaLinter {
  lint(xml: string): Promise<LintReport[]>;
}
type LinterClass = new (options: { modeler?: "desktop" | "web"; type: "cloud" | "platform" }) => CamundaLinter;

let linterClass: Promise<LinterClass> | undefined;

/**
 * The Modelers' linter, `@camunda/linting` (bpmnlint with `bpmnlint-plugin-camunda-compat`, the
 * rule set chosen by the diagram's `modeler:executionPlatform` and `…Version`). The package ships
 * sources for a bundler only (extensionless imports, JSON imports, CommonJS rules), as the
 * Modelers use it: it is bundled here in memory with the project's vite, once per process.
 */
export function camundaLinter(type: "cloud" | "platform"): Promise<CamundaLinter> {
  linterClass ??= (async () => {
    const output = await build({
      configFile: false,
      logLevel: "silent",
      root: ROOT,
      build: {
        write: false,
        minify: false,
        lib: { entry: "node_modules/@camunda/linting/index.js", formats: ["es"], fileName: "camunda-linting" },
        rolldownOptions: { output: { codeSplitting: false } },
      },
    });
    const chunks = (Array.isArray(output) ? output : [output as Rollup.RollupOutput]).flatMap((o) => o.output);
    const entry = chunks.find((c): c is Rollup.OutputChunk => c.type === "chunk" && c.isEntry);
    if (entry === undefined) throw new Error("bundling @camunda/linting gave no entry chunk");
    const module = (await import(`data:text/javascript;base64,${Buffer.from(entry.code).toString("base64")}`)) as { Linter: LinterClass };
    return module.Linter;
  })();
  return linterClass.then((Linter) => new Linter({ modeler: "desktop", type }));
}
