import { randomUUID } from "node:crypto";
import { expect } from "chai";
import knexFactory, { type Knex } from "knex";
import { openDatabase, type Database } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";
import { migrations } from "../../src/db/migrations.js";
import { eventPartitions, keepEventPartitions, PARTITION_MONTHS_AHEAD, startPartitionUpkeep, type PartitionUpkeep } from "../../src/db/partitions.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { backendNames, TEST_DATABASE_URL } from "../support/backends.js";

const PARTITIONED = migrations.findIndex((m) => m.id === "007_events_partitioned_by_month");

/** Every row of events, as one digest and a count: equal digests, equal rows (every column). */
async function digest(knex: Knex): Promise<{ n: number; md5: string }> {
  const { rows } = (await knex.raw(
    "select count(*)::int as n, md5(coalesce(string_agg(e::text, '|' order by tenant, item_id, ts, source_id), '')) as md5 from events e",
  )) as { rows: { n: number; md5: string }[] };
  return rows[0]!;
}

async function partitionNames(knex: Knex): Promise<string[]> {
  return (await eventPartitions(knex)).map((p) => p.name);
}

describe("events partitioned by month: the migration on a filled table [postgres]", function () {
  this.timeout(120_000);
  const schema = `partition_${randomUUID().replace(/-/g, "")}`;
  let knex: Knex;
  before(async () => {
    knex = knexFactory({ client: "pg", connection: TEST_DATABASE_URL, searchPath: [schema], pool: { min: 0, max: 1 } });
    await knex.raw(`create schema ${schema}`);
  });
  after(async () => {
    await knex.raw(`drop schema ${schema} cascade`);
    await knex.destroy();
  });

  it("moves every row of the flat events table into monthly partitions, none lost or changed", async () => {
    expect(PARTITIONED).to.be.greaterThan(0);
    await migrate(knex, migrations.slice(0, PARTITIONED));
    expect((await knex.raw("select relkind from pg_class where oid = 'events'::regclass")).rows[0].relkind).to.equal("r");
    // 3 tenants × 4 items × 14 months of hourly events, every column filled on some rows, and the
    // first and last instants the service accepts.
    await knex.raw(`insert into events (tenant, item_id, ts, source_id, value, tags, key_values, tenant_codes, entity_references, meta_entry, meta_exit, meta_from, meta_to)
      select 't' || t, md5('item' || i)::uuid, ts, case when h % 5 = 0 then 's' || (h % 3) else '' end, h * 0.25 + t,
             case when h % 7 = 0 then array['a', 'b"' || h] end, case when h % 11 = 0 then jsonb_build_object('k', h::text) end,
             case when h % 13 = 0 then '{"c": "1"}'::jsonb end, case when h % 17 = 0 then '[{"type": "Site", "id": "x"}]'::jsonb end,
             case when h % 19 = 0 then ts end, case when h % 19 = 0 then ts + interval '1 hour' end, null, null
      from generate_series(1, 3) t, generate_series(1, 4) i,
           generate_series(timestamptz '2025-01-01T00:00:00Z', timestamptz '2026-02-28T23:00:00Z', interval '1 hour') with ordinality as g(ts, h)`);
    await knex.raw(`insert into events (tenant, item_id, ts, value) values
      ('t1', md5('item1')::uuid, '1000-01-01T00:00:00Z', 1), ('t1', md5('item1')::uuid, '9999-12-31T23:59:59.998Z', 2)`);
    const before = await digest(knex);
    expect(before.n).to.equal(3 * 4 * (365 + 59) * 24 + 2);

    expect(await migrate(knex)).to.include("007_events_partitioned_by_month");

    expect(await digest(knex)).to.deep.equal(before);
    expect((await knex.raw("select relkind from pg_class where oid = 'events'::regclass")).rows[0].relkind).to.equal("p");
    const months = Array.from({ length: 14 }, (_, k) => `events_y${2025 + Math.floor(k / 12)}m${String((k % 12) + 1).padStart(2, "0")}`);
    expect(await partitionNames(knex)).to.deep.equal(["events_y1000m01", ...months, "events_y9999m12"]);
    expect((await knex.raw("select count(*)::int as n from events_default")).rows[0].n).to.equal(0);
    // Each row in the partition of its month (UTC).
    const { rows: misplaced } = (await knex.raw(
      "select count(*)::int as n from events where tableoid::regclass::text <> 'events_' || to_char(ts at time zone 'UTC', '\"y\"YYYY\"m\"MM')",
    )) as { rows: { n: number }[] };
    expect(misplaced[0]!.n).to.equal(0);
    // The key is unchanged: the tenant leads it, and a re-sent event conflicts on it.
    const { rows: key } = (await knex.raw("select pg_get_constraintdef(oid) as def from pg_constraint where conrelid = 'events'::regclass and contype = 'p'")) as { rows: { def: string }[] };
    expect(key[0]!.def).to.equal("PRIMARY KEY (tenant, item_id, ts, source_id)");
  });
});

for (const name of backendNames) {
  describe(`events partitions kept by the service [${name}]`, function () {
    this.timeout(120_000);
    const schema = `partition_${randomUUID().replace(/-/g, "")}`;
    let db: Database;
    let item: string;
    const tenant = "t";
    const now = new Date("2026-11-27T12:00:00Z");
    before(async () => {
      if (name === "postgres") {
        const admin = knexFactory({ client: "pg", connection: TEST_DATABASE_URL });
        await admin.raw(`create schema ${schema}`);
        await admin.destroy();
      }
      db = await openDatabase({ databaseUrl: name === "postgres" ? TEST_DATABASE_URL : undefined, dataDir: "memory://", poolSize: 2, schema });
      const [stored] = await upsertEntities(db.knex, tenant, [{ type: "Item", key: "meter", attributes: { itemAction: "INGEST" } }]);
      item = stored!.id;
    });
    after(async () => {
      if (name === "postgres") await db.knex.raw(`drop schema ${schema} cascade`);
      await db.close();
    });

    const count = async (table = "events") => ((await db.knex.raw(`select count(*)::int as n from ${table}`)) as { rows: { n: number }[] }).rows[0]!.n;
    const ingest = (timestamps: string[]) => ingestEvents(db.knex, tenant, timestamps.map((timestamp, k) => ({ itemId: item, timestamp, value: k })));

    it("takes events of any month, makes the months ahead and splits the default partition's months out", async () => {
      // No month has a partition yet: every event goes to the default one, none is refused.
      const stored = await ingest(["1000-01-01T00:00:00Z", "2026-01-15T00:00:00Z", "2026-11-20T00:00:00Z", "5000-06-01T00:00:00Z", "9999-12-31T00:00:00Z"]);
      expect(stored.stored).to.equal(5);
      expect(await count("events_default")).to.equal(5);

      const upkeep = await keepEventPartitions(db.knex, now);
      const ahead = Array.from({ length: PARTITION_MONTHS_AHEAD + 1 }, (_, k) => `events_y${2026 + Math.floor((10 + k) / 12)}m${String(((10 + k) % 12) + 1).padStart(2, "0")}`);
      expect(upkeep.created).to.deep.equal(["events_y1000m01", "events_y2026m01", ...ahead, "events_y5000m06", "events_y9999m12"]);
      expect(await count("events_default")).to.equal(0);
      expect(await count()).to.equal(5);
      // A second round finds everything made.
      expect(await keepEventPartitions(db.knex, now)).to.deep.equal({ created: [], dropped: [], deleted: 0 });
      // The COPY path (arrays on the embedded database) writes into the partitions and re-sends still replace.
      expect((await ingest(["2026-11-20T00:00:00Z", "2026-12-01T00:00:00Z"])).stored).to.equal(2);
      expect(await count()).to.equal(6);
    });

    it("drops whole months past EVENTS_RETENTION_DAYS and deletes the default partition's rows past it", async () => {
      // A month without a partition, wholly past the horizon: it stays in the default partition until deleted.
      expect((await ingest(["2025-05-10T00:00:00Z"])).stored).to.equal(1);
      expect(await count("events_default")).to.equal(1);
      const before = await count();
      // 100 days before 2026-11-27: 2026-08-19. Months ending by then go; August (ending after it) stays.
      const upkeep = await keepEventPartitions(db.knex, now, 100);
      expect(upkeep).to.deep.equal({ created: [], dropped: ["events_y1000m01", "events_y2026m01"], deleted: 1 });
      expect(await count()).to.equal(before - 3);
      expect(await partitionNames(db.knex)).to.not.include.members(["events_y1000m01", "events_y2026m01"]);
      const { rows } = (await db.knex.raw("select min(ts) as first from events")) as { rows: { first: Date }[] };
      expect(rows[0]!.first.toISOString()).to.equal("2026-11-20T00:00:00.000Z");
    });
  });
}

describe("the partition upkeep of a starting service [embedded]", function () {
  this.timeout(60_000);
  it("makes the months ahead before it resolves, reports what it did, and stops", async () => {
    const db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1 });
    try {
      const rounds: PartitionUpkeep[] = [];
      const keeper = await startPartitionUpkeep(db.knex, { retentionDays: 30, onDone: (upkeep) => rounds.push(upkeep) });
      await keeper.stop();
      const thisMonth = new Date().toISOString().slice(0, 7).replace("-", "m");
      expect(rounds).to.have.length(1);
      expect(rounds[0]!.created).to.have.length(PARTITION_MONTHS_AHEAD + 1);
      expect(rounds[0]!.created[0]).to.equal(`events_y${thisMonth}`);
      expect(await partitionNames(db.knex)).to.deep.equal(rounds[0]!.created);
    } finally {
      await db.close();
    }
  });

  it("does not wait for the default partition's months: they are split out by the round that follows, in the background", async () => {
    const db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1 });
    try {
      const tenant = `t-${randomUUID()}`;
      const [item] = await upsertEntities(db.knex, tenant, [{ type: "Item", key: "late", attributes: { itemAction: "INGEST" } }]);
      // An event dated past the months made ahead (a device's wrong clock): the default partition holds it.
      expect((await ingestEvents(db.knex, tenant, [{ itemId: item!.id, timestamp: "4000-02-03T00:00:00Z", value: 1 }])).stored).to.equal(1);
      const rounds: PartitionUpkeep[] = [];
      let second: () => void = () => {};
      const secondDone = new Promise<void>((resolve) => (second = resolve));
      const keeper = await startPartitionUpkeep(db.knex, {
        onDone: (upkeep) => {
          rounds.push(upkeep);
          if (rounds.length === 2) second();
        },
      });
      // Resolved after the months ahead alone.
      expect(rounds).to.have.length(1);
      expect(rounds[0]!.created).to.have.length(PARTITION_MONTHS_AHEAD + 1);
      expect(await partitionNames(db.knex)).to.not.include("events_y4000m02");
      await secondDone;
      await keeper.stop();
      expect(rounds[1]).to.deep.equal({ created: ["events_y4000m02"], dropped: [], deleted: 0 });
      const { rows } = (await db.knex.raw("select count(*)::int as n from events_default")) as { rows: { n: number }[] };
      expect(rows[0]!.n).to.equal(0);
    } finally {
      await db.close();
    }
  });
});
