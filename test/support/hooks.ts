import { closeBackends } from "./backends.js";

/** Root hooks: the shared databases close once, after every suite. */
export const mochaHooks = {
  async afterAll(): Promise<void> {
    await closeBackends();
  },
};
