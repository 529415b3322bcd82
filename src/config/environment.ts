/** The variables of an environment, by name. */
export type Env = Record<string, string | undefined>;

/** The process environment; the one place that reads it. */
export function processEnvironment(): Env {
  return process.env;
}
