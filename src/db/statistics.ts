import type { Knex } from "knex";

/** Rows written to the graph tables (since the last ANALYZE) past which the statistics are renewed: this many, plus a tenth of the rows counted then. */
const BASE_THRESHOLD = 500;
const SCALE_FACTOR = 0.1;
const GRAPH_WRITE = /^\s*(?:insert\s+into|update|delete\s+from)\s+"?(entities|links)"?\s/i;

interface QueryData {
  sql?: string;
}

export interface StatisticsKeeper {
  /** Renews the statistics now (and resets the count). */
  analyze(): Promise<void>;
  /** Stops watching; an ANALYZE under way is awaited. */
  stop(): Promise<void>;
}

/**
 * PGlite runs no autovacuum, so without this the planner of the embedded database never has
 * statistics: it guesses one row per table and picks scans and join sides accordingly. The
 * keeper runs ANALYZE on the graph tables at start and again, in the background, once the rows
 * written since the last one pass `500 + 10 %` of the rows then (autovacuum's rule of thumb), each
 * time after emptying the attribute index's pending list (which only a VACUUM would otherwise do).
 */
export function keepStatisticsFresh(knex: Knex, onError: (err: unknown) => void = () => {}): StatisticsKeeper {
  let written = 0;
  let threshold = BASE_THRESHOLD;
  let running: Promise<void> | undefined;
  let stopped = false;

  const analyze = async () => {
    written = 0;
    // What autovacuum's VACUUM would also do: move the attribute index's pending list (GIN
    // `fastupdate`, up to 4 MB) into the index. Every attribute lookup reads that list in full, so
    // after a bulk write each probe of a graph query read it (bench/RESULTS.md, "The GIN index's
    // pending list"). First, so that the renewed statistics mean the list was emptied.
    await knex.raw("select gin_clean_pending_list('entities_scoped_attributes'::regclass)");
    await knex.raw("analyze entities, links");
    const { rows } = (await knex.raw(
      "select coalesce(sum(greatest(reltuples, 0)), 0)::float8 as n from pg_class where relname in ('entities', 'links') and relkind = 'r'",
    )) as { rows: { n: number }[] };
    threshold = BASE_THRESHOLD + SCALE_FACTOR * Number(rows[0]?.n ?? 0);
  };
  const schedule = () => {
    if (running !== undefined || stopped) return;
    running = analyze()
      .catch((err: unknown) => {
        if (!stopped) onError(err);
      })
      .finally(() => {
        running = undefined;
      });
  };
  const onResponse = (response: unknown, query: QueryData) => {
    if (query.sql === undefined || !GRAPH_WRITE.test(query.sql)) return;
    written += rowsOf(response);
    if (written >= threshold) schedule();
  };
  knex.on("query-response", onResponse);
  return {
    async analyze() {
      while (running !== undefined) await running;
      await analyze();
    },
    async stop() {
      stopped = true;
      knex.removeListener("query-response", onResponse);
      while (running !== undefined) await running;
    },
  };
}

function rowsOf(response: unknown): number {
  if (Array.isArray(response)) return response.length;
  if (typeof response === "number") return response;
  const result = response as { rowCount?: number; affectedRows?: number } | null;
  return Number(result?.rowCount ?? result?.affectedRows ?? 1);
}
