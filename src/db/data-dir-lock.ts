import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The embedded database is one process's: two processes writing the same files would corrupt
 * them. A lock file holding the owner's pid keeps a second process out; a lock left by a process
 * that no longer runs is taken over. Answers the function that releases the lock.
 */
export function lockDataDir(dir: string): () => void {
  const lockFile = join(dir, "service.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: "wx" });
      return () => rmSync(lockFile, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number(readFileSync(lockFile, "utf8").trim());
      if (Number.isInteger(owner) && owner > 0 && isRunning(owner)) {
        throw new Error(
          `DATA_DIR ${dir} is in use by process ${owner}; stop that process or choose another DATA_DIR (or set DATABASE_URL)`,
          { cause: err },
        );
      }
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`could not take the lock on DATA_DIR ${dir}`);
}

function isRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
