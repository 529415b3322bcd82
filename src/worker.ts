import { runFromEnvironment } from "./run.js";

/**
 * The process-engine workers alone (`npm run worker`): the Camunda 7 and/or Zeebe workers the
 * environment asks for, on the same database as the REST server, with only /health, /ready and
 * /metrics served on PORT. Stops like the server: SIGTERM → no new fetch, tasks in hand finish.
 */
runFromEnvironment("worker");
