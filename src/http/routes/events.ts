import { Readable } from "node:stream";
import { Type } from "typebox";
import { invalidRequest, ProblemError } from "../../errors.js";
import { instant, rangeBoundMillis } from "../../timeseries/events.js";
import { CSV_HEADER, csvLine } from "../../timeseries/export.js";
import type { EventJson } from "../../timeseries/query.js";
import type { IngestResult } from "../../timeseries/ingest.js";
import { RETAINED_FROM_HEADER, type QueryNotes } from "../../timeseries/retention.js";
import { csvRows, ndjsonRows } from "../../timeseries/upload.js";
import { requireTenant } from "../request.js";
import type { App, ServerDeps } from "../types.js";
import { Bucket, DateRangeBody, QueryOptionsBody, Uuid } from "../schemas.js";
import { QueryTypeBody } from "../series-schemas.js";

const NDJSON = "application/x-ndjson";
const CSV = "text/csv";

/** Where an upload's rows come from: the parsed JSON body, or the request stream for NDJSON and CSV. */
function uploadRows(contentType: string | undefined, body: unknown, maxLineBytes: number): { rows: AsyncIterable<unknown> | Iterable<unknown>; numericStrings: boolean } {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === NDJSON) return { rows: ndjsonRows(body as Readable, maxLineBytes), numericStrings: false };
  if (type === CSV) return { rows: csvRows(body as Readable, maxLineBytes), numericStrings: true };
  const events = (body as { events?: unknown } | null)?.events;
  if (!Array.isArray(events)) throw new ProblemError("INVALID_REQUEST", 'the body must be { "events": [ … ] }, or NDJSON or CSV lines', { errors: [{ path: "body.events", message: "must be an array" }] });
  return { rows: events, numericStrings: false };
}

/** `{ stored }`, and `streamed` when events of STREAM items were pushed without being stored. */
function storedAnswer(result: IngestResult): { stored: number; streamed?: number } {
  return result.streamed > 0 ? { stored: result.stored, streamed: result.streamed } : { stored: result.stored };
}

/** `answer`, with what the read noted as headers: `Events-Retained-From` when its range starts before the retention horizon. */
function withNotes<T>(reply: { header(name: string, value: string): unknown }, notes: QueryNotes, answer: T): T {
  if (notes.eventsRetainedFrom !== undefined) reply.header(RETAINED_FROM_HEADER, notes.eventsRetainedFrom);
  return answer;
}

/** The export asked for by `Accept`: NDJSON or CSV; undefined for JSON (the default). */
function exportFormat(accept: string | undefined): "ndjson" | "csv" | undefined {
  const types = (accept ?? "").split(",").map((t) => t.split(";")[0]!.trim().toLowerCase());
  if (types.includes(NDJSON)) return "ndjson";
  if (types.includes(CSV)) return "csv";
  return undefined;
}

/** The export's text, line by line: one JSON event per line, or the CSV header then one line per event. */
async function* exportLines(events: AsyncIterable<EventJson>, format: "ndjson" | "csv"): AsyncGenerator<string> {
  if (format === "csv") yield `${CSV_HEADER.join(",")}\r\n`;
  for await (const event of events) yield format === "csv" ? csvLine(event) : `${JSON.stringify(event)}\n`;
}

export function eventRoutes(app: App, { services, config }: ServerDeps): void {
  // NDJSON and CSV uploads are read as streams, batch by batch, not buffered whole.
  app.addContentTypeParser([NDJSON, CSV], (_request, payload, done) => done(null, payload));
  const admin = { access: "admin" as const };
  const tags = ["time series"];
  const Stored = Type.Object({
    stored: Type.Integer(),
    streamed: Type.Optional(Type.Integer({ description: "events of STREAM items pushed to their subscribers and not stored; absent when none" })),
    rejected: Type.Optional(Type.Array(Type.Record(Type.String(), Type.Unknown()))),
    rejectedTotal: Type.Optional(Type.Integer()),
  });
  const Partial = Type.Object({ partial: Type.Boolean({ default: false, description: "store the good rows and report the bad ones" }) }, { additionalProperties: false });
  // JSON is checked as a whole; NDJSON and CSV are streams, checked row by row as they are read.
  const UploadBody = {
    content: {
      "application/json": {
        schema: Type.Object(
          {
            events: Type.Array(
              Type.Unknown({ description: "an event: timestamp, value, sourceId?, tags?, keyValues?, …, and itemId on POST /events; a bad one is listed by row" }),
            ),
          },
          { additionalProperties: false },
        ),
      },
      [NDJSON]: { schema: Type.String({ description: "one JSON event per line" }) },
      [CSV]: { schema: Type.String({ description: "a header line naming the fields, then one event per line" }) },
    },
  };
  const uploadDescription =
    'Body: { "events": [event] } as JSON, or one event per line as application/x-ndjson, or text/csv with a header line. ' +
    "One bad row stores nothing (all listed) unless ?partial=true.";

  app.post(
    "/items/:itemId/events",
    {
      config: admin,
      schema: {
        operationId: "ingestItemEvents",
        summary: "Ingest events of one item",
        description: uploadDescription,
        tags,
        params: Type.Object({ itemId: Uuid }),
        querystring: Partial,
        body: UploadBody,
        response: { 200: Stored },
      },
    },
    async (request) => {
      const { rows, numericStrings } = uploadRows(request.headers["content-type"], request.body, config.uploadLineLimitBytes);
      const result = await services.timeSeries.ingest(requireTenant(request), rows, { itemId: request.params.itemId.toLowerCase(), partial: request.query.partial, numericStrings });
      return request.query.partial ? { ...storedAnswer(result), rejected: result.rejected, rejectedTotal: result.rejectedTotal } : storedAnswer(result);
    },
  );

  app.post(
    "/events",
    {
      config: admin,
      schema: { operationId: "ingestEvents", summary: "Ingest events of many items; each event names its itemId", description: uploadDescription, tags, querystring: Partial, body: UploadBody, response: { 200: Stored } },
    },
    async (request) => {
      const { rows, numericStrings } = uploadRows(request.headers["content-type"], request.body, config.uploadLineLimitBytes);
      const result = await services.timeSeries.ingest(requireTenant(request), rows, { partial: request.query.partial, numericStrings });
      return request.query.partial ? { ...storedAnswer(result), rejected: result.rejected, rejectedTotal: result.rejectedTotal } : storedAnswer(result);
    },
  );

  const Event = Type.Object(
    { timestamp: Type.String({ format: "date-time" }), value: Type.Number() },
    { additionalProperties: true, description: "an event: timestamp and value, with sourceId, tags, keyValues, … when stored" },
  );
  const Events = Type.Object({ events: Type.Array(Event) }, { additionalProperties: false });
  const Buckets = Type.Object({ buckets: Type.Array(Bucket) }, { additionalProperties: false });
  const SeriesBody = {
    eventDateRange: Type.Optional(DateRangeBody),
    queryOptions: Type.Optional(QueryOptionsBody),
  };
  app.post(
    "/items/:itemId/events/query",
    {
      config: admin,
      schema: {
        operationId: "queryItemEvents",
        summary: "Events of one item in a date range: raw, or aggregated into buckets when queryOptions.aggregation is given",
        description:
          "With Accept: application/x-ndjson (one event per line) or text/csv (the upload's header), the raw events are exported as a stream, " +
          'without pagination or size limit, sorted by timestamp (sorting.order ["timestamp-"] for descending).',
        tags,
        params: Type.Object({ itemId: Uuid }),
        body: Type.Object(SeriesBody, { additionalProperties: false }),
        // A derived item (a calculation of VALUE type behind it) answers { value }.
        response: { 200: Type.Union([Events, Buckets, Type.Object({ value: Type.Union([Type.Number(), Type.Null()]) }, { additionalProperties: false })]) },
      },
    },
    async (request, reply) => {
      const format = exportFormat(request.headers.accept);
      const notes: QueryNotes = {};
      if (format === undefined) return withNotes(reply, notes, await services.timeSeries.itemQuery(requireTenant(request), request.params.itemId, request.body, notes));
      const events = await services.timeSeries.exportEvents(requireTenant(request), request.params.itemId, request.body, notes);
      withNotes(reply, notes, undefined);
      return reply.type(format === "ndjson" ? NDJSON : `${CSV}; charset=utf-8`).send(Readable.from(exportLines(events, format)) as never);
    },
  );

  app.get(
    "/items/:itemId/events/latest",
    {
      config: admin,
      schema: {
        operationId: "latestItemEvent",
        summary: "The latest stored event of one item (a derived item's latest bucket), or null",
        tags,
        params: Type.Object({ itemId: Uuid }),
        response: { 200: Type.Object({ event: Type.Union([Event, Type.Null()]) }, { additionalProperties: false }) },
      },
    },
    async (request) => ({ event: (await services.timeSeries.latest(requireTenant(request), [request.params.itemId]))[0]!.event }),
  );

  app.post(
    "/events/latest",
    {
      config: admin,
      schema: {
        operationId: "latestEvents",
        summary: "The latest stored event of each item of a list, or null",
        tags,
        body: Type.Object({ itemIds: Type.Array(Uuid, { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false }),
        response: {
          200: Type.Object(
            { latest: Type.Array(Type.Object({ itemId: Type.String(), event: Type.Union([Event, Type.Null()]) }, { additionalProperties: false })) },
            { additionalProperties: false },
          ),
        },
      },
    },
    async (request) => ({ latest: await services.timeSeries.latest(requireTenant(request), request.body.itemIds) }),
  );

  app.delete(
    "/items/:itemId/events",
    {
      config: admin,
      schema: {
        operationId: "deleteItemEvents",
        summary: "Deletes an item's events in [from, to), in one transaction",
        tags,
        params: Type.Object({ itemId: Uuid }),
        querystring: Type.Object({ from: Type.String({ format: "date-time" }), to: Type.String({ format: "date-time" }) }, { additionalProperties: false }),
        response: { 200: Type.Object({ deleted: Type.Integer() }, { additionalProperties: false }) },
      },
    },
    async (request) => {
      const from = instant(request.query.from);
      const to = instant(request.query.to);
      if (from === undefined) throw invalidRequest("from must be an ISO-8601 instant", "querystring.from");
      if (to === undefined) throw invalidRequest("to must be an ISO-8601 instant", "querystring.to");
      const [start, end] = [rangeBoundMillis(request.query.from, from.getTime()), rangeBoundMillis(request.query.to, to.getTime())];
      return { deleted: await services.timeSeries.deleteRange(requireTenant(request), request.params.itemId, new Date(start), new Date(end)) };
    },
  );

  app.post(
    "/timeline/query",
    {
      config: admin,
      schema: {
        operationId: "queryTimeline",
        summary: "One series per item (raw or aggregated), or with queryType SINGLEAGGREGATION one timeline over an index set's items",
        tags,
        body: Type.Object(
          { itemIds: Type.Optional(Type.Array(Type.String(), { maxItems: 10_000 })), queryType: Type.Optional(QueryTypeBody), ...SeriesBody },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Union([
            Type.Object(
              {
                series: Type.Array(
                  Type.Union([
                    Type.Object({ itemId: Type.String(), events: Type.Array(Event) }, { additionalProperties: false }),
                    Type.Object({ itemId: Type.String(), buckets: Type.Array(Bucket) }, { additionalProperties: false }),
                  ]),
                ),
              },
              { additionalProperties: false },
            ),
            Buckets,
          ]),
        },
      },
    },
    async (request, reply) => {
      const notes: QueryNotes = {};
      return withNotes(reply, notes, await services.timeSeries.timelineQuery(requireTenant(request), request.body, notes));
    },
  );
}
