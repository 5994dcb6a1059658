/** Something that must not outlive this Node process. */
export interface Stoppable {
  /** Orderly shutdown. */
  stop(): Promise<void>;
  /** Synchronous kill, for the process 'exit' event where nothing can be awaited. */
  stopNow(): void;
}

const live = new Set<Stoppable>();
let exitHookInstalled = false;
let signalHooksInstalled = false;

/**
 * Tracks `s` until {@link untrack}: on process exit it is killed synchronously, and, when `handleSignals` is set,
 * SIGINT or SIGTERM stop every tracked object in order and then exit with 128 + the signal number.
 * Callers that own their signal handling (a CLI that must first wait for its child command) pass false.
 */
export function track(s: Stoppable, handleSignals: boolean): void {
  live.add(s);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", stopAllNow);
  }
  if (handleSignals && !signalHooksInstalled) {
    signalHooksInstalled = true;
    process.on("SIGINT", () => onSignal(130));
    process.on("SIGTERM", () => onSignal(143));
  }
}

/** Forgets `s` (it has been stopped). */
export function untrack(s: Stoppable): void {
  live.delete(s);
}

/** Stops everything still tracked, in parallel. */
export async function stopAll(): Promise<void> {
  await Promise.allSettled([...live].map((s) => s.stop()));
}

/** Kills everything still tracked, synchronously. */
export function stopAllNow(): void {
  for (const s of live) s.stopNow();
  live.clear();
}

let stopping = false;
function onSignal(exitCode: number): void {
  // A second Ctrl-C while stopping means "now".
  if (stopping) {
    stopAllNow();
    process.exit(exitCode);
  }
  stopping = true;
  void stopAll().finally(() => process.exit(exitCode));
}
