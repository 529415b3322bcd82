/**
 * Keeps a running task's lock (Camunda 7) or job timeout (Zeebe): `extend` is called three times
 * per `durationMs`, so one slow round trip does not let it lapse. Once the outcome is being
 * reported (`release`), an extension racing the report would only meet a task the engine has just
 * closed: it is neither sent nor logged. Extensions never overlap: while one is unanswered the next
 * is skipped (two at once update the same row: Camunda 7 on PostgreSQL refused one with an
 * OptimisticLockingException, measured under load).
 */
export function keepLocked(extend: () => Promise<unknown>, durationMs: number, onError: (err: unknown) => void): { release: () => void } {
  let released = false;
  let pending = false;
  const timer = setInterval(() => {
    if (released || pending) return;
    pending = true;
    extend()
      .catch((err: unknown) => {
        if (!released) onError(err);
      })
      .finally(() => (pending = false));
  }, Math.max(100, durationMs / 3));
  return {
    release() {
      released = true;
      clearInterval(timer);
    },
  };
}
