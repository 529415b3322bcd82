type Env = Record<string, string | undefined>;

/**
 * Where the demo listens unless HOST says otherwise: the loopback interface only. The demo prints
 * a 12-hour admin token and keeps a development signing secret; it is for the machine it runs on.
 * The production start keeps its documented default (`0.0.0.0`).
 */
export const DEMO_HOST = "127.0.0.1";

/** The environment the demo configures itself from: the given one, HOST defaulting to {@link DEMO_HOST}. */
export function demoEnvironment(env: Env): Env {
  return env.HOST === undefined || env.HOST.trim() === "" ? { ...env, HOST: DEMO_HOST } : { ...env };
}
