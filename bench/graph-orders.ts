/**
 * Does a graph query's speed depend on how it is written? For the issue's pattern and for
 * generated patterns, runs every statement order on a small random graph (hubs, cycles, self
 * links) and reports, per pattern, the slowest order's time against the fastest's, measured in
 * the same run. Goal: at most 3x. The graph is written just before and not analysed (on the
 * embedded database it stays under the ANALYZE threshold), as in the issue.
 *
 *   npm run build && node dist/bench/graph-orders.js [--backend=postgres|embedded] [--patterns=40] [--runs=5] [--seed=1]
 */
import { randomUUID } from "node:crypto";
import { openDatabase } from "../src/db/database.js";
import { upsertEntities } from "../src/graph/entities.js";
import { createLinks } from "../src/graph/links.js";
import { compileQuery } from "../src/graph/query/compiler.js";
import { executeQuery } from "../src/graph/query/execute.js";
import { parseQuery } from "../src/graph/query/parser.js";
import { option, percentile } from "./harness.js";

const backend = option("backend", "postgres");
const patternCount = Number(option("patterns", "40"));
const runs = Number(option("runs", "7"));
const seed = Number(option("seed", "1"));
const verbose = option("verbose", "false") === "true";
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
const LIMITS = { timeoutMs: 120_000, maxRows: 1_000_000 };

/** A small deterministic generator (mulberry32), so every run measures the same graph and patterns. */
function random(state: number): () => number {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The issue's graph: 30 entities T t0…t29, f "v" on every fifth, 100 random links per relation a, b, c, a self link a on every seventh. */
async function seedGraph(db: Awaited<ReturnType<typeof openDatabase>>, tenant: string, next: () => number): Promise<void> {
  const entities = Array.from({ length: 30 }, (_, i) => ({ type: "T", key: `t${i}`, attributes: i % 5 === 0 ? { f: "v" } : {} }));
  const stored = await upsertEntities(db.knex, tenant, entities);
  const pick = () => ({ id: stored[Math.floor(next() * stored.length)]!.id });
  const links = ["a", "b", "c"].flatMap((relation) => Array.from({ length: 100 }, () => ({ from: pick(), relation, to: pick() })));
  stored.forEach((e, i) => {
    if (i % 7 === 0) links.push({ from: { id: e.id }, relation: "a", to: { id: e.id } });
  });
  await createLinks(db.knex, tenant, links);
}

const ISSUE_PATTERN = [`T ?x; link:a ?x.`, `T ?y; link:b ?x.`, `T ?z; link:c T:?y; attribute:f "v".`];

/** Three or four statements over labels x, y, z, w, each linking to another label; some with a constant. */
function generatePattern(next: () => number): string[] {
  const labels = ["x", "y", "z", "w"].slice(0, 3 + Math.floor(next() * 2));
  return labels.map((label, i) => {
    const clauses = [`T ?${label}`];
    const target = labels[Math.floor(next() * labels.length)]!;
    clauses.push(`link:${"abc"[Math.floor(next() * 3)]} T:?${target}`);
    if (i > 0 && next() < 0.5) clauses.push(`link:${"abc"[Math.floor(next() * 3)]} T:?${labels[Math.floor(next() * i)]}`);
    if (next() < 0.3) clauses.push(`attribute:f "v"`);
    if (next() < 0.1) clauses.push(`entity:key "t${Math.floor(next() * 30)}"`);
    return clauses.join("; ") + ".";
  });
}

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

async function main(): Promise<void> {
  const db = await openDatabase({ databaseUrl: backend === "postgres" ? databaseUrl : undefined, dataDir: "memory://", poolSize: 4 });
  const tenant = `bench-orders-${randomUUID()}`;
  const next = random(seed);
  try {
    await seedGraph(db, tenant, next);
    const patterns = [ISSUE_PATTERN, ...Array.from({ length: patternCount }, () => generatePattern(next))];
    const ratios: number[] = [];
    let worst = { ratio: 0, slowest: "", fastest: "", slowMs: 0, fastMs: 0 };
    let totalSlowest = 0;
    let totalFastest = 0;
    for (const pattern of patterns) {
      let slowest = { ms: -Infinity, source: "" };
      let fastest = { ms: Infinity, source: "" };
      let answer: string | undefined;
      const orders = permutations(pattern).map((order) => {
        const source = order.join(" ");
        return { source, compiled: compileQuery(parseQuery(source)), times: [] as number[] };
      });
      // Rounds over all orders, two untimed first: a drift of the engine (the embedded one warms
      // up for a while) then weighs on every order alike.
      for (let round = -2; round < runs; round++) {
        for (const order of orders) {
          const started = performance.now();
          const output = await executeQuery(db.graph, order.compiled, tenant, {}, LIMITS);
          const ms = performance.now() - started;
          if (round >= 0) order.times.push(ms);
          // Every order must give the same distinct entities per label.
          const canonical = JSON.stringify(Object.keys(output).sort().map((k) => [k, output[k]!.map((e) => (e as { id: string }).id).sort()]));
          if (answer === undefined) answer = canonical;
          else if (answer !== canonical) throw new Error(`orders disagree for ${order.source}`);
        }
      }
      for (const { source, times } of orders) {
        const ms = percentile(times.sort((a, b) => a - b), 50);
        if (verbose) console.log(`${ms.toFixed(2).padStart(8)} ms  ${times.map((t) => t.toFixed(1)).join(" ")}  ${source}`);
        if (ms > slowest.ms) slowest = { ms, source };
        if (ms < fastest.ms) fastest = { ms, source };
      }
      const ratio = slowest.ms / fastest.ms;
      ratios.push(ratio);
      totalSlowest += slowest.ms;
      totalFastest += fastest.ms;
      if (ratio > worst.ratio) worst = { ratio, slowest: slowest.source, fastest: fastest.source, slowMs: slowest.ms, fastMs: fastest.ms };
      if (pattern === ISSUE_PATTERN) {
        console.log(`${backend}: the issue's pattern: slowest order ${slowest.ms.toFixed(2)} ms, fastest ${fastest.ms.toFixed(2)} ms, ratio ${ratio.toFixed(2)}x`);
      }
    }
    ratios.sort((a, b) => a - b);
    console.log(`${backend}: ${patterns.length} patterns, every statement order, median of ${runs} runs each`);
    console.log(`slowest / fastest order per pattern: median ${percentile(ratios, 50).toFixed(2)}x, p90 ${percentile(ratios, 90).toFixed(2)}x, max ${ratios[ratios.length - 1]!.toFixed(2)}x`);
    console.log(`sum over patterns of the slowest order / of the fastest: ${(totalSlowest / totalFastest).toFixed(2)}x (${totalSlowest.toFixed(1)} ms / ${totalFastest.toFixed(1)} ms)`);
    console.log(`worst pattern: ${worst.slowMs.toFixed(2)} ms for\n  ${worst.slowest}\nagainst ${worst.fastMs.toFixed(2)} ms for\n  ${worst.fastest}`);
  } finally {
    await db.knex("links").where({ tenant }).del();
    await db.knex("entities").where({ tenant }).del();
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
