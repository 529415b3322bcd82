/**
 * parseJson next to JSON.parse, in the same run, on a `POST /graph/entities` body of `--entities`
 * entities (about 250 bytes each): without any backslash (JSON.parse as is), with backslashes in
 * values only (one scan, then JSON.parse), and with escaped attribute keys (the strict parser).
 * Then the strict parser's CPU time per byte on texts 1x, 4x and 16x that size, and on texts
 * made to be hard (long runs of backslashes and escaped quotes, deep nesting): it stays linear.
 *
 *   npm run build && node dist/bench/json.js [--entities=2000] [--rounds=7]
 */
import { parseJson, parseJsonStrictly } from "../src/json.js";
import { option } from "./harness.js";

const entities = Number(option("entities", "2000"));
const rounds = Number(option("rounds", "7"));

function body(count: number, kind: "plain" | "escaped values" | "escaped keys"): string {
  const list = Array.from({ length: count }, (_, i) => {
    const attributes: Record<string, unknown> = {
      name: kind === "plain" ? `Meter ${i}` : `Meter "${i}"\non C:\\site\\${i % 13}`,
      capacityKw: (i % 250) * 1.5,
      tags: ["north", `zone-${i % 7}`],
      installed: "2024-03-01T00:00:00Z",
    };
    if (kind === "escaped keys") {
      attributes['label "short"'] = `L${i}`;
      attributes["path\\to"] = i;
    }
    return { type: "Meter", key: `EAN-${String(i).padStart(10, "0")}`, attributes };
  });
  return JSON.stringify({ entities: list });
}

/** The median CPU time (ms) of `iterations` calls, over `rounds` rounds. */
function cpuMs(fn: () => unknown, iterations: number): number {
  for (let i = 0; i < iterations; i++) fn(); // warm-up
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const started = process.cpuUsage();
    for (let i = 0; i < iterations; i++) fn();
    const used = process.cpuUsage(started);
    times.push((used.user + used.system) / 1000 / iterations);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

function main(): void {
  console.log(`POST /graph/entities body of ${entities} entities; median CPU ms per parse of ${rounds} rounds`);
  for (const kind of ["plain", "escaped values", "escaped keys"] as const) {
    const text = body(entities, kind);
    const native = cpuMs(() => JSON.parse(text), 20);
    const ours = cpuMs(() => parseJson(text), 20);
    console.log(`  ${kind.padEnd(15)} ${(text.length / 1024).toFixed(0).padStart(5)} KiB  JSON.parse ${native.toFixed(2)} ms  parseJson ${ours.toFixed(2)} ms  ratio ${(ours / native).toFixed(2)}x`);
  }

  console.log("CPU ns per byte at 1x / 4x / 16x the size (linear if flat):");
  const base = body(entities, "escaped keys");
  const hard = {
    "escaped keys": (n: number) => body(entities * n, "escaped keys"),
    "backslash runs": (n: number) => JSON.stringify({ [`k\\${"\\".repeat(1000 * n)}`]: "\\".repeat(100_000 * n) }),
    "escaped quotes": (n: number) => JSON.stringify(Object.fromEntries(Array.from({ length: 2000 * n }, (_, i) => [`"${i}"`, '""""""""']))),
    "deep nesting": (n: number) => `${'{"k\\"":['.repeat(20_000 * n)}1${"]}".repeat(20_000 * n)}`,
  };
  for (const [name, make] of Object.entries(hard)) {
    // JSON.parse on the same texts: what growing heaps cost any parser, next to ours.
    const perByte = (parse: (text: string) => unknown) =>
      [1, 4, 16].map((n) => {
        const text = make(n);
        return (cpuMs(() => parse(text), Math.max(1, Math.round(16 / n))) * 1e6) / text.length;
      });
    const ours = perByte(parseJsonStrictly);
    const native = perByte(JSON.parse);
    const show = (ns: number[]) => `${ns.map((x) => x.toFixed(1)).join(" / ")} (16x vs 1x ${(ns[2]! / ns[0]!).toFixed(2)})`;
    console.log(`  ${name.padEnd(15)} strict ${show(ours)}   JSON.parse ${show(native)}`);
  }
  const native = cpuMs(() => JSON.parse(base), 20);
  const strict = cpuMs(() => parseJsonStrictly(base), 20);
  console.log(`strict parser alone vs JSON.parse on the escaped-keys body: ${(strict / native).toFixed(2)}x`);
}

main();
