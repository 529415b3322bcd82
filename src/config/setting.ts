import { accessSync, constants, statSync } from "node:fs";
import { z } from "zod";
import { Secret } from "../secrets.js";

/**
 * The one declaration of a setting: its environment variable, the kind of value it takes (with
 * its bounds), its default, one line of doc and its group. The `Config` type, the defaults, the
 * checks and the configuration reference (`npm run docs:config`) are all derived from these.
 */

/** What a variable's text may be, and what it is read as. */
export interface Kind<T> {
  /** The check and conversion of one variable's text; every message names the variable `name`. */
  schema(name: string): z.ZodType<T | undefined>;
  /** The values it accepts, for the reference. */
  allowed: string;
  /** A value as the reference shows it; default: its JSON. */
  show?(value: T): string;
}

/** Another name the same setting may be given under (an SDK's name); all names given must agree. */
export interface Alias<T> {
  env: string;
  /** How the name is read when it differs from the setting's own kind (a URL scheme meaning TLS). */
  kind?: Kind<T>;
  /** The name in a message, when it is only a part of the variable. */
  label?: string;
  /** Where the name comes from, for the reference. */
  note?: string;
}

/** `value`: the whole variable is secret; `password`: the password in it (a URL's userinfo). */
export type Secrecy = "value" | "password";

interface Declaration<T> {
  env: string;
  kind: Kind<T>;
  /** One line for the reference: what the setting does. */
  doc: string;
  /** More about it, rendered under its group's table. */
  notes?: string;
  aliases?: readonly Alias<T>[];
  secret?: Secrecy;
  /** The default as the reference states it, when the value depends on the machine. */
  defaultText?: string;
  /** What its absence means, for a setting without a default. */
  absent?: string;
}

/** A declared setting; `Out` is its value in the configuration: `T`, or `T | undefined` without a default. */
export interface Setting<T, Out extends T | undefined = T | undefined> extends Declaration<T> {
  default: Out;
}

export function setting<T>(declared: Declaration<T> & { default: NoInfer<T> }): Setting<T, T>;
export function setting<T>(declared: Declaration<T> & { absent: string }): Setting<T, T | undefined>;
export function setting<T>(declared: Declaration<T> & { default?: T }): Setting<T> {
  return { ...declared, default: declared.default };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any setting, whatever its value type
export type AnySetting = Setting<any, any>;
export type Settings = Record<string, AnySetting>;

/** The configuration's values of a group of settings, defaults applied. */
export type Values<S extends Settings> = { [K in keyof S]: S[K] extends Setting<infer _T, infer Out> ? Out : never };
/** The values given in the environment, `undefined` for those absent. */
export type Given<S extends Settings> = { [K in keyof S]?: S[K] extends Setting<infer T, infer _Out> ? T : never };

type Env = Record<string, string | undefined>;

/** A group of settings read from the environment. */
export interface Reading<S extends Settings> {
  given: Given<S>;
  /** The name each setting was given under (the first of its names given), else its own. */
  names: { [K in keyof S]: string };
  /** Values that fail their kind, as `NAME: message`. */
  issues: string[];
  /** Names of one setting that disagree. */
  conflicts: string[];
}

/** Reads a group of settings: each of its names through its kind, then the names of one setting agreed. */
export function readSettings<S extends Settings>(settings: S, env: Env): Reading<S> {
  const reading: Reading<S> = { given: {}, names: {} as Reading<S>["names"], issues: [], conflicts: [] };
  for (const [key, declared] of Object.entries(settings) as [keyof S & string, AnySetting][]) {
    const named: [string, unknown][] = [];
    for (const name of [{ env: declared.env } as Alias<unknown>, ...(declared.aliases ?? [])]) {
      const parsed = (name.kind ?? declared.kind).schema(name.env).safeParse(env[name.env]);
      if (!parsed.success) reading.issues.push(...parsed.error.issues.map((issue) => `${name.env}: ${issue.message}`));
      else named.push([name.label ?? name.env, parsed.data]);
    }
    reading.given[key] = agreed(reading.conflicts, named) as Given<S>[typeof key];
    reading.names[key] = named.find(([, value]) => value !== undefined)?.[0] ?? declared.env;
  }
  return reading;
}

/** The values of a group: each given one, else its default. */
export function withDefaults<S extends Settings>(settings: S, given: Given<S>): Values<S> {
  return Object.fromEntries(Object.entries(settings).map(([key, declared]) => [key, given[key] ?? declared.default])) as Values<S>;
}

/** The defaults of a group. */
export function defaultsOf<S extends Settings>(settings: S): Values<S> {
  return withDefaults(settings, {});
}

/** Only the named settings of a group. */
export function pick<S extends Settings, K extends keyof S>(settings: S, ...keys: K[]): Pick<S, K> {
  return Object.fromEntries(keys.map((key) => [key, settings[key]])) as Pick<S, K>;
}

function same(a: unknown, b: unknown): boolean {
  return a instanceof Secret && b instanceof Secret ? a.reveal() === b.reveal() : a === b;
}

/**
 * One setting given under several names (ours, the SDK's): the value they agree on. Two names
 * that disagree are a problem naming both, never their values (one may be a secret).
 */
export function agreed<T>(problems: string[], named: readonly (readonly [name: string, value: T | undefined])[]): T | undefined {
  const given = named.filter((n): n is readonly [string, T] => n[1] !== undefined);
  const first = given[0];
  if (first === undefined) return undefined;
  const other = given.find(([, value]) => !same(value, first[1]));
  if (other !== undefined) problems.push(`${first[0]} and ${other[0]} disagree: they name the same setting; set one of them, or both to the same value`);
  return first[1];
}

// The kinds of value.

const optionalText = z
  .string()
  .transform((s) => s.trim())
  .transform((s) => (s === "" ? undefined : s))
  .optional();

/** Any text, trimmed; blank is absent. */
export const text: Kind<string> = { schema: () => optionalText, allowed: "text" };

/** Like {@link text}, held as a {@link Secret}: serialised or logged, it reads `***`. */
export const secretText: Kind<Secret> = {
  schema: () => optionalText.transform((s) => (s === undefined ? undefined : new Secret(s))),
  allowed: "text",
};

/** A text the checker `test` accepts, else `${name} ${message}`. */
export function checkedText(test: (value: string) => boolean, message: string, allowed: string): Kind<string> {
  return { schema: (name) => optionalText.refine((v) => v === undefined || test(v), `${name} ${message}`), allowed };
}

/** A whole number from `min` to `max`; `unit` for the reference. */
export function integer(min: number, max: number, unit?: "bytes" | "ms" | "s" | "MiB"): Kind<number> {
  const plain = (n: number) => (unit === "bytes" ? bytes(n) : String(n));
  return {
    schema: (name) =>
      z
        .string()
        .regex(/^\d+$/, `${name} must be a whole number`)
        .transform(Number)
        .refine((n) => n >= min && n <= max, `${name} must be between ${min} and ${max}`)
        .optional(),
    allowed: `${plain(min)} to ${plain(max)}${unit === undefined || unit === "bytes" ? "" : ` ${unit}`}`,
    show: (n) => (unit === "bytes" ? bytes(n).replace(/^\d+/, "`$&`") : `\`${n}\``),
  };
}

/** A count of bytes, with its size in KiB, MiB or GiB when it is a whole one. */
function bytes(n: number): string {
  const units: [number, string][] = [
    [1024 ** 3, "GiB"],
    [1024 ** 2, "MiB"],
    [1024, "KiB"],
  ];
  const unit = units.find(([size]) => n >= size && n % size === 0);
  return unit === undefined ? `${n}` : `${n} (${n / unit[0]} ${unit[1]})`;
}

/** `true`, `false`, `1` or `0` (any case); blank is false. */
export const flag: Kind<boolean> = {
  schema: (name) =>
    z
      .string()
      .transform((s) => s.trim().toLowerCase())
      .refine((s) => ["true", "false", "1", "0", ""].includes(s), `${name} must be true or false`)
      .transform((s) => s === "true" || s === "1")
      .optional(),
  allowed: "`true`, `false`, `1`, `0`",
};

/**
 * One of `values`. `exact`: the text as given, blank refused (LOG_LEVEL); otherwise trimmed and
 * blank absent. `why`: said after the list in the message.
 */
export function oneOf<const V extends string>(values: readonly V[], options: { exact?: boolean; why?: string } = {}): Kind<V> {
  const message = (name: string) => `${name} must be one of ${values.join(", ")}${options.why === undefined ? "" : ` (${options.why})`}`;
  return {
    schema: (name) => {
      const choice = z.enum(values as [V, ...V[]], message(name)).optional();
      return options.exact === true ? choice : optionalText.pipe(choice);
    },
    allowed: values.map((v) => `\`${v}\``).join(", "),
    show: (v) => `\`${v}\``,
  };
}

export function isUrl(value: string, protocols: string[]): boolean {
  try {
    return protocols.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** An http(s) URL; `example` said in the message. */
export function httpUrl(example?: string): Kind<string> {
  return checkedText((v) => isUrl(v, ["http:", "https:"]), `must be an http(s) URL${example === undefined ? "" : ` like ${example}`}`, "http(s) URL");
}

/** The path of a file the process can read. */
export const readableFile: Kind<string> = checkedText(isReadableFile, "must be a readable PEM file", "path of a readable PEM file");

function isReadableFile(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** A group of settings in the reference: a table of its own. */
export interface Group {
  title: string;
  /** A sentence under the title. */
  about?: string;
  settings: Settings;
}
