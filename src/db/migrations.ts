/**
 * The schema, as an ordered list of migrations. Each runs once, inside the migration transaction
 * (see migrate.ts); a migration once released is never edited, only followed by another.
 *
 * The tenant leads every key and every index, so one tenant's rows are one index range.
 */
export interface Migration {
  id: string;
  statements: string[];
}

export const migrations: Migration[] = [
  {
    id: "001_initial",
    statements: [
      `create table entities (
        tenant text not null,
        id uuid not null,
        type text not null,
        key text not null,
        attributes jsonb not null default '{}'::jsonb,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        primary key (tenant, id),
        constraint entities_tenant_type_key unique (tenant, type, key),
        constraint entities_attributes_object check (jsonb_typeof(attributes) = 'object')
      )`,
      // jsonb_path_ops: smaller and faster than the default operator class for `@>`, the only
      // operator the graph compiler uses on attributes.
      `create index entities_attributes on entities using gin (attributes jsonb_path_ops)`,
      `create table links (
        tenant text not null,
        from_id uuid not null,
        relation text not null,
        to_id uuid not null,
        created_at timestamptz not null default now(),
        primary key (tenant, from_id, relation, to_id),
        foreign key (tenant, from_id) references entities (tenant, id) on delete cascade,
        foreign key (tenant, to_id) references entities (tenant, id) on delete cascade
      )`,
      // The primary key walks links forwards; this one walks them backwards.
      `create index links_reverse on links (tenant, to_id, relation, from_id)`,
      `create table events (
        tenant text not null,
        item_id uuid not null,
        ts timestamptz not null,
        source_id text not null default '',
        value double precision not null,
        tags text[],
        key_values jsonb,
        tenant_codes jsonb,
        entity_references jsonb,
        meta_entry timestamptz,
        meta_exit timestamptz,
        meta_from timestamptz,
        meta_to timestamptz,
        primary key (tenant, item_id, ts, source_id)
      )`,
      `create table api_definitions (
        tenant text not null,
        id uuid not null,
        external_id text not null,
        name text,
        version text,
        active boolean not null default true,
        data jsonb not null default '{}'::jsonb,
        query text not null,
        transform text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        primary key (tenant, id),
        constraint api_definitions_tenant_external_id unique (tenant, external_id)
      )`,
      `create table calculation_definitions (
        tenant text not null,
        id uuid not null,
        external_id text not null,
        name text,
        calculation_type text not null,
        active boolean not null default true,
        data jsonb not null default '{}'::jsonb,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        primary key (tenant, id),
        constraint calculation_definitions_tenant_external_id unique (tenant, external_id),
        constraint calculation_definitions_type check (calculation_type in ('EXPRESSION', 'STATE-EXPRESSION', 'CALCULATION'))
      )`,
    ],
  },
  {
    id: "002_tasks_in_hand",
    statements: [
      // The process-engine tasks a worker process has in hand (src/tasks/in-hand.ts): a row left by
      // a process that ended marks a task that may have ended it. Keyed by engine, not tenant: a
      // task is taken before its tenant is known, and its key is unique per engine.
      `create table tasks_in_hand (
        engine text not null,
        task_key text not null,
        worker_id text not null,
        topic text not null,
        attempts integer not null default 1,
        started_at timestamptz not null default now(),
        primary key (engine, task_key),
        constraint tasks_in_hand_engine check (engine in ('camunda7', 'zeebe'))
      )`,
    ],
  },
  {
    id: "003_graph_work_budget",
    statements: [
      // The embedded database cannot interrupt a statement (statement_timeout is ignored there), so
      // a graph query counts the rows its walk visits on this sequence, reset before each query,
      // and stops with this error past its budget. Sequences are not rolled back, so the count is
      // exact whatever the plan; on PostgreSQL statement_timeout bounds a query instead.
      `create sequence graph_work_visits minvalue 0 start with 0`,
      `create function graph_work_exceeded() returns boolean language plpgsql volatile as $$
      begin
        raise exception 'graph query work budget exceeded' using errcode = 'GQ001';
      end $$`,
    ],
  },
  {
    id: "004_stream_payloads",
    statements: [
      // Live streams (src/streams/): a notification carries at most 8000 bytes; a larger message
      // is kept here and the notification names its id. Rows are read at once by every listening
      // process and deleted after a short retention.
      `create table stream_payloads (
        id bigserial primary key,
        payload text not null,
        created_at timestamptz not null default now()
      )`,
      `create index stream_payloads_created_at on stream_payloads (created_at)`,
    ],
  },
  {
    id: "005_stream_watchers",
    statements: [
      // Which processes have live-stream subscribers of which tenant, until when (renewed while
      // they do): an upload announces its events only when some process watches its tenant.
      `create table stream_watchers (
        process_id text not null,
        tenant text not null,
        expires_at timestamptz not null,
        primary key (process_id, tenant)
      )`,
      `create index stream_watchers_tenant on stream_watchers (tenant, expires_at)`,
    ],
  },
  {
    id: "006_tenant_scoped_attributes",
    statements: [
      // The graph compiler finds an entity by its attributes through this index only: its keys are
      // the attributes under the entity's tenant and type ({tenant: {type: attributes}}), so a
      // lookup reads only the matches of the caller's tenant and type, whatever other tenants
      // hold, and its plan does not depend on the tenant's size. That is what lets the graph
      // walks run on plans made once per statement (src/db/database.ts, graph pool). Immutable:
      // for text and jsonb arguments jsonb_build_object is (it is declared stable for every type).
      `create function graph_scoped_attributes(tenant text, type text, attributes jsonb) returns jsonb
        language sql immutable parallel safe
        as $$ select jsonb_build_object(tenant, jsonb_build_object(type, attributes)) $$`,
      `create index entities_scoped_attributes on entities using gin (graph_scoped_attributes(tenant, type, attributes) jsonb_path_ops)`,
      // Its only user, the graph compiler, no longer reads attributes across tenants.
      `drop index entities_attributes`,
      // Statistics on the new index's expression at once, for the plans made with the values.
      `analyze entities`,
    ],
  },
  {
    id: "007_events_partitioned_by_month",
    statements: [
      // Events partitioned by month of their timestamp (UTC), each month a table of its own, so
      // that retention drops whole months instead of deleting rows (docs/decisions/2026-11-27-events-partitioned-by-month.md).
      // A default partition takes the events of any month without a table yet (a backfill, a
      // timestamp in the year 1000 or 9999): no event is ever refused. The service makes the
      // months ahead and splits the default partition's months out (src/db/partitions.ts).
      `alter table events rename to events_unpartitioned`,
      `alter table events_unpartitioned rename constraint events_pkey to events_unpartitioned_pkey`,
      // The same columns, not-null constraints and defaults, the same key.
      `create table events (like events_unpartitioned including defaults, primary key (tenant, item_id, ts, source_id)) partition by range (ts)`,
      `create table events_default partition of events default`,
      // The month of month_start (UTC) as the partition events_yYYYYmMM, unless it exists: made
      // apart, filled with that month's rows of the default partition (moved), then attached —
      // attaching takes a lighter lock on events than creating a partition in place. Null when it existed.
      `create function events_month_partition(month_start timestamp) returns text language plpgsql volatile as $$
      declare
        month_first timestamp := date_trunc('month', month_start);
        lo timestamptz := month_first at time zone 'UTC';
        hi timestamptz := (month_first + interval '1 month') at time zone 'UTC';
        part_name text := 'events_' || to_char(month_first, '"y"YYYY"m"MM');
      begin
        if to_regclass(part_name) is not null then
          return null;
        end if;
        execute format('create table %I (like events including defaults)', part_name);
        execute format('with moved as (delete from events_default where ts >= %L and ts < %L returning *) insert into %I select * from moved', lo, hi, part_name);
        execute format('alter table events attach partition %I for values from (%L) to (%L)', part_name, lo, hi);
        return part_name;
      end $$`,
      // Every month the table holds gets its partition before the rows move, so none stays in the default.
      `select events_month_partition(m) from (select distinct date_trunc('month', ts at time zone 'UTC') as m from events_unpartitioned) as months`,
      `insert into events (tenant, item_id, ts, source_id, value, tags, key_values, tenant_codes, entity_references, meta_entry, meta_exit, meta_from, meta_to)
        select tenant, item_id, ts, source_id, value, tags, key_values, tenant_codes, entity_references, meta_entry, meta_exit, meta_from, meta_to
        from events_unpartitioned`,
      `drop table events_unpartitioned`,
    ],
  },
  {
    id: "008_event_rollups",
    statements: [
      // Rollups of the events (docs/decisions/2026-11-27-event-rollups.md, src/timeseries/rollup-store.ts):
      // 15-minute UTC cells, and per zone of ROLLUP_ZONES local days and months built from them.
      // Each row holds what the metrics need: count, sum, min, max, and the first and last event
      // (timestamp, sourceId, value) of its span.
      `create table rollup_cells (
        tenant text not null, item_id uuid not null, cell timestamptz not null,
        n integer not null, sum float8 not null, min float8 not null, max float8 not null,
        open_ts timestamptz not null, open_source text not null, open float8 not null,
        close_ts timestamptz not null, close_source text not null, close float8 not null,
        primary key (tenant, item_id, cell)
      )`,
      // grain 'day' or 'month'; period: the local date that starts it in the zone.
      `create table rollup_periods (
        tenant text not null, item_id uuid not null, zone text not null, grain text not null, period date not null,
        n integer not null, sum float8 not null, min float8 not null, max float8 not null,
        open_ts timestamptz not null, open_source text not null, open float8 not null,
        close_ts timestamptz not null, close_source text not null, close float8 not null,
        primary key (tenant, item_id, zone, grain, period)
      )`,
      // The invalidation log: the UTC days of an item whose events changed since its rollups were
      // made, a row per write (never updated: a writer takes no lock), so that a reconciler removes
      // only the rows it has read, never one written while it worked.
      `create table rollup_dirty (
        tenant text not null, id bigint generated always as identity, item_id uuid not null, day date not null,
        primary key (tenant, id)
      )`,
      `create index rollup_dirty_item_day on rollup_dirty (tenant, item_id, day)`,
      // The zones whose days and months a tenant's rollups hold (built once from the cells, then kept).
      `create table rollup_zones (tenant text not null, zone text not null, primary key (tenant, zone))`,
      // The events already stored are marked: the reconciler builds their rollups in the background.
      `insert into rollup_dirty (tenant, item_id, day)
        select distinct tenant, item_id, (ts at time zone 'UTC')::date from events`,
    ],
  },
  {
    id: "009_definition_history",
    statements: [
      // Every change of an API or Calculation Definition, written in the change's own transaction
      // (src/db/definition-history.ts): who (the token's user), when, what (the action) and the
      // whole record, numbered per definition. Kept after a delete: a deleted definition can be restored.
      `create table definition_history (
        tenant text not null,
        kind text not null,
        external_id text not null,
        version integer not null,
        action text not null,
        record jsonb not null,
        detail jsonb,
        user_id text,
        user_name text,
        changed_at timestamptz not null default now(),
        primary key (tenant, kind, external_id, version),
        constraint definition_history_kind check (kind in ('api', 'calculation')),
        constraint definition_history_action check (action in ('baseline', 'create', 'update', 'activate', 'deactivate', 'delete', 'restore', 'rename'))
      )`,
      // The definitions stored before history was kept start with a "baseline" version: as they are, at their updatedAt, by nobody known.
      `insert into definition_history (tenant, kind, external_id, version, action, record, changed_at)
        select tenant, 'api', external_id, 1, 'baseline', jsonb_build_object(
          'id', id, 'name', name, 'externalId', external_id, 'version', version, 'active', active, 'data', data,
          'query', query, 'transform', coalesce(transform, ''),
          'createdAt', to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'updatedAt', to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')), updated_at
        from api_definitions`,
      `insert into definition_history (tenant, kind, external_id, version, action, record, changed_at)
        select tenant, 'calculation', external_id, 1, 'baseline', jsonb_build_object(
          'id', id, 'name', coalesce(name, ''), 'externalId', external_id, 'calculationType', calculation_type, 'active', active, 'data', data,
          'createdAt', to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'updatedAt', to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')), updated_at
        from calculation_definitions`,
    ],
  },
  {
    id: "010_scoped_attributes_inlined",
    statements: [
      // The same values (the index keeps its entries), from functions that are all immutable, so
      // PostgreSQL inlines the function wherever it is called instead of running it as a SQL
      // function — parsed and planned again at every execution of the calling statement (the
      // recheck of every attribute lookup): 13 % of a graph walk's CPU. jsonb_build_object is
      // declared stable, which kept the former body from being inlined.
      `create or replace function graph_scoped_attributes(tenant text, type text, attributes jsonb) returns jsonb
        language sql immutable parallel safe
        as $$ select jsonb_set(jsonb_set('{}'::jsonb, array[tenant], '{}'::jsonb), array[tenant, type], attributes) $$`,
    ],
  },
  {
    id: "011_rollup_periods_covering",
    statements: [
      // A portfolio's Daily answer reads 365 day rows per item (src/timeseries/rollup-query.ts):
      // the key carries what count, sum, avg, min and max read, so those rows come from an
      // index-only scan instead of a heap page per few rows (bench/RESULTS.md, Rollups). The same
      // key, so every statement keeps its plan; the rows of open, close and diff still read the table.
      `alter table rollup_periods drop constraint rollup_periods_pkey`,
      `alter table rollup_periods add constraint rollup_periods_pkey primary key (tenant, item_id, zone, grain, period) include (n, sum, min, max)`,
    ],
  },
  {
    id: "012_rollup_dirty_ranges",
    statements: [
      // A mark names the first and last quarter hour (their starts) its write touched within the day: the reconcile
      // rebuilds those cells only, not the whole day again at every round while an item's day fills
      // (bench/RESULTS.md, MQTT: a live item's day rebuilt every 2 s cost more as the day went on).
      // Null on the marks written before: the whole day.
      `alter table rollup_dirty add column lo timestamptz, add column hi timestamptz`,
    ],
  },
  {
    id: "014_rollup_day_packs",
    statements: [
      // A portfolio's Daily answer read a day row per item and day (365,000 rows for 1,000 items over
      // a year, 142–335 ms): per item, zone and local half-year, its days' count and sum packed in
      // one row, read whole and added up day by day in the service (src/timeseries/rollup-query.ts;
      // docs/decisions/2026-11-28-rollup-day-packs.md). `half` is the half-year's first local date
      // (1 January or 1 July); each column holds one entry per day of the half-year, in order, as
      // PostgreSQL sends them in binary (n: int4send, sum: float8send, big-endian); a day without
      // events has n = 0 (its sum 0, never read). Count, sum and avg only: the pages a portfolio's
      // Daily answer reads are its cost (min and max would triple them); min, max, open, close and
      // diff still read the day rows. A row is at most 2.3 kB, under the table's toast_tuple_target:
      // kept whole in its page, never compressed nor moved out of line (a read would then fetch its
      // chunks one by one). Kept with the day and month rows by every reconcile (src/timeseries/rollup-store.ts).
      `create table rollup_day_packs (
        tenant text not null, item_id uuid not null, zone text not null, half date not null,
        n bytea not null, sum bytea not null,
        primary key (tenant, item_id, zone, half)
      ) with (toast_tuple_target = 8160)`,
      // The half-years already rolled up, packed from their day rows.
      `insert into rollup_day_packs (tenant, item_id, zone, half, n, sum)
        select h.tenant, h.item_id, h.zone, h.half, x.*
        from (select distinct tenant, item_id, zone, (date_trunc('month', period::timestamp) - ((extract(month from period)::int - 1) % 6) * interval '1 month')::date as half
              from rollup_periods where grain = 'month') as h
        cross join lateral (
          select string_agg(int4send(coalesce(d.n, 0)), ''::bytea order by k.day), string_agg(float8send(coalesce(d.sum, 0)), ''::bytea order by k.day)
          from generate_series(h.half::timestamp, h.half + interval '6 months' - interval '1 day', interval '1 day') as k(day)
          left join (select period, n, sum from rollup_periods
                     where tenant = h.tenant and item_id = h.item_id and zone = h.zone and grain = 'day' and period >= h.half and period < (h.half + interval '6 months')::date) as d
            on d.period = k.day::date) as x`,
    ],
  },
  {
    id: "015_attribute_index_pending_list",
    statements: [
      // New entries of a GIN index wait in its pending list (fastupdate) until a VACUUM, or until
      // the list passes gin_pending_list_limit (4 MB by default), and every lookup reads the whole
      // list. After a bulk write of entities, each attribute probe of a graph walk read up to 4 MB,
      // until autovacuum came (on PostgreSQL) or the list filled (the embedded database has no
      // autovacuum): the issue 30 value join took 50 ms instead of 5-8 on PostgreSQL, 93-101 ms
      // instead of 8-14 embedded. A list of 64 kB (the least allowed) keeps fastupdate's batched
      // inserts, and seeding 152,207 entities took no longer (bench/RESULTS.md, "The GIN index's pending list").
      `alter index entities_scoped_attributes set (gin_pending_list_limit = 64)`,
    ],
  },
];
