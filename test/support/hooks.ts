import { closeBackends } from "./backends.js";
import { runEndStops } from "./process.js";

/** Root hooks: the shared databases close and the shared engines stop once, after every suite. */
export const mochaHooks = {
  async afterAll(): Promise<void> {
    await runEndStops();
    await closeBackends();
  },
};
