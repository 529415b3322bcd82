import { runFromEnvironment } from "./run.js";

/** Production entry point: the REST server, with the workers beside it when an engine is configured. */
runFromEnvironment("server");
