import { expect } from "chai";
import { ProblemError } from "../../src/errors.js";
import { resolveEventDateRange, type EventDateRange } from "../../src/timeseries/periods.js";

// Sunday 31 March 2024, 12:30 in Brussels: the day clocks spring forward (02:00 → 03:00).
const NOW = new Date("2024-03-31T10:30:00Z");
const ZONE = "Europe/Brussels";

function range(r: EventDateRange | undefined, now = NOW): [string, string] {
  const resolved = resolveEventDateRange(r, now, ZONE);
  return [resolved.from.toUTC().toISO()!, resolved.to.toUTC().toISO()!];
}

function refused(r: EventDateRange): ProblemError {
  try {
    resolveEventDateRange(r, NOW, ZONE);
  } catch (err) {
    expect(err).to.be.instanceOf(ProblemError);
    expect((err as ProblemError).status).to.equal(400);
    return err as ProblemError;
  }
  expect.fail("accepted");
}

describe("event date ranges", () => {
  const cases: [EventDateRange["period"], string, string][] = [
    ["This hour", "2024-03-31T10:00:00.000Z", "2024-03-31T11:00:00.000Z"],
    ["Last hour", "2024-03-31T09:00:00.000Z", "2024-03-31T10:00:00.000Z"],
    ["Today", "2024-03-30T23:00:00.000Z", "2024-03-31T22:00:00.000Z"],
    ["Yesterday", "2024-03-29T23:00:00.000Z", "2024-03-30T23:00:00.000Z"],
    ["This week", "2024-03-24T23:00:00.000Z", "2024-03-31T22:00:00.000Z"],
    ["Last week", "2024-03-17T23:00:00.000Z", "2024-03-24T23:00:00.000Z"],
    ["7 days till now", "2024-03-24T11:30:00.000Z", "2024-03-31T10:30:00.000Z"],
    ["14 days till now", "2024-03-17T11:30:00.000Z", "2024-03-31T10:30:00.000Z"],
    ["This month", "2024-02-29T23:00:00.000Z", "2024-03-31T22:00:00.000Z"],
    ["Last month", "2024-01-31T23:00:00.000Z", "2024-02-29T23:00:00.000Z"],
    ["This year", "2023-12-31T23:00:00.000Z", "2024-12-31T23:00:00.000Z"],
    ["Last year", "2022-12-31T23:00:00.000Z", "2023-12-31T23:00:00.000Z"],
    ["Year till now", "2023-12-31T23:00:00.000Z", "2024-03-31T10:30:00.000Z"],
  ];
  for (const [period, from, to] of cases) {
    it(`resolves ${period} in Brussels on the spring-forward Sunday`, () => {
      expect(range({ period })).to.deep.equal([from, to]);
    });
  }

  it("defaults to This week", () => {
    expect(range(undefined)).to.deep.equal(["2024-03-24T23:00:00.000Z", "2024-03-31T22:00:00.000Z"]);
  });

  it("makes Today 25 hours long on the fall-back Sunday", () => {
    expect(range({ period: "Today" }, new Date("2024-10-27T12:00:00Z"))).to.deep.equal(["2024-10-26T22:00:00.000Z", "2024-10-27T23:00:00.000Z"]);
  });

  it("reads the period in another zone", () => {
    expect(range({ period: "Today", timeZone: "America/New_York" })).to.deep.equal(["2024-03-31T04:00:00.000Z", "2024-04-01T04:00:00.000Z"]);
    expect(range({ period: "This week", timeZone: "Asia/Kolkata" })).to.deep.equal(["2024-03-24T18:30:00.000Z", "2024-03-31T18:30:00.000Z"]);
  });

  it("takes a Custom range of ISO instants, UTC unless an offset is given", () => {
    expect(range({ period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00+01:00" })).to.deep.equal([
      "2024-01-01T00:00:00.000Z",
      "2024-01-01T23:00:00.000Z",
    ]);
    expect(range({ period: "Custom range", from: "2024-01-01T00:00:00", to: "2024-01-01T06:00" })).to.deep.equal([
      "2024-01-01T00:00:00.000Z",
      "2024-01-01T06:00:00.000Z",
    ]);
  });

  it("reads the {{today}} and {{now}} tokens", () => {
    expect(range({ period: "Custom range", from: "{{today}}", to: "{{now}}" })).to.deep.equal(["2024-03-30T23:00:00.000Z", "2024-03-31T10:30:00.000Z"]);
  });

  it("refuses a Custom range without from or to, or with from not before to", () => {
    expect(refused({ period: "Custom range", from: "2024-01-01T00:00:00Z" }).message).to.equal("a Custom range needs both from and to");
    expect(refused({ period: "Custom range", from: "{{now}}", to: "{{today}}" }).message).to.equal(
      "from (2024-03-31T10:30:00.000Z) must be before to (2024-03-30T23:00:00.000Z)",
    );
    expect(refused({ period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-01T00:00:00Z" }).errors?.[0]?.path).to.equal("eventDateRange.from");
  });

  it("refuses an unknown zone, period, date field or date text", () => {
    expect(refused({ timeZone: "Mars/Olympus" }).message).to.match(/^unknown time zone "Mars\/Olympus"/);
    expect(refused({ period: "Next week" as never }).message).to.match(/^unknown period "Next week"/);
    expect(refused({ type: "entry" }).message).to.match(/only date field is "timestamp"/);
    expect(refused({ period: "Custom range", from: "yesterday", to: "{{now}}" }).message).to.equal('"yesterday" is not an ISO-8601 date-time, {{now}} or {{today}}');
  });
});
