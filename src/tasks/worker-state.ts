/**
 * What a worker is doing, in one place: the fetch under way (Camunda 7's long poll), the tasks in
 * hand, whether it is stopping, and the failed tries of an outage of its engine. The transports
 * tell it what happens; it answers when the worker is idle and wakes a back-off pause at a stop.
 */
export class WorkerState {
  private tasks = 0;
  private fetching = false;
  private stopped = false;
  private failures = 0;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly sleepers = new Set<() => void>();

  /** Tasks in hand. */
  get inFlight(): number {
    return this.tasks;
  }

  /** A fetch is under way. */
  get polling(): boolean {
    return this.fetching;
  }

  /** stop() was called: no new fetch, no reconnection. */
  get stopping(): boolean {
    return this.stopped;
  }

  /** Failed tries to reach the engine since it last answered; 0 while it answers. */
  get failedTries(): number {
    return this.failures;
  }

  taskStarted(): void {
    this.tasks++;
  }

  taskEnded(): void {
    this.tasks--;
    this.notifyIfIdle();
  }

  /** A fetch begins; `fetches` false for one that asks for nothing (every slot taken). */
  pollStarted(fetches: boolean): void {
    this.fetching = fetches;
  }

  /**
   * The fetch ended. Tasks it brought start right after the client says so: idleness is judged
   * once their handlers have counted them (on the next turn of the event loop).
   */
  pollEnded(): void {
    this.fetching = false;
    setImmediate(() => this.notifyIfIdle());
  }

  /** The engine could not be reached; true for the first failure of an outage (the one to log). */
  unreachable(): boolean {
    return this.failures++ === 0;
  }

  /** The engine answered: the failed tries of the outage it ends, 0 when there was none. */
  reachable(): number {
    const failed = this.failures;
    this.failures = 0;
    return failed;
  }

  /** Waits `ms` (a back-off), or less when the worker stops meanwhile. */
  pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.sleepers.add(wake);
    });
  }

  /** Marks the worker stopping (ending its pauses); resolves once no fetch and no task is under way. */
  stop(): Promise<void> {
    this.stopped = true;
    for (const wake of [...this.sleepers]) wake();
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.notifyIfIdle();
    });
  }

  private notifyIfIdle(): void {
    if (this.tasks === 0 && !this.fetching) this.idleWaiters.splice(0).forEach((resolve) => resolve());
  }
}
