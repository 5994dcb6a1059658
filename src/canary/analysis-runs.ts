import pLimit, { type LimitFunction } from "p-limit";
import type { Logger } from "pino";
import type { Clock } from "../time/clock.js";
import type { CanaryApp, MetricResult } from "../api/types.js";
import { toError } from "../kube/errors.js";
import type { AnalysisProvider } from "../analysis/providers/analysis-provider.js";
import type { AnalysisCheck } from "../analysis/checks.js";
import type { QueryOutcome } from "../analysis/outcome.js";
import { runAnalysis } from "./analysis.js";

export interface AnalysisRunsOptions {
  provider: AnalysisProvider;
  /** Called with the app's key when its analysis has finished: the key is reconciled again. */
  requeue(key: string): void;
  /** Which server the app's checks go to; runs to one server are bounded by `perHost`. */
  hostOf(app: CanaryApp): string;
  /** How long the app's analysis may take from its start, waiting for a slot included. */
  deadlineMs(app: CanaryApp): number;
  /** Analyses in flight per host at most. Default 4. */
  perHost?: number;
  clock: Clock;
  log: Logger;
}

/** What a reconcile learns about the analysis of the step it finds due. */
export type AnalysisState =
  | { kind: "running" }
  | { kind: "done"; results: MetricResult[] }
  /** The provider rejected (trouble retrying may fix): the reconcile throws it, and its retry starts anew. */
  | { kind: "failed"; error: Error };

interface Run {
  step: string;
  state: AnalysisState;
}

export const DEFAULT_ANALYSES_PER_HOST = 4;

/**
 * Analyses run off the work queue. A reconcile that finds a step's analysis due asks `state(key, step, ...)`:
 * the first ask starts the run and answers `running`, and the reconcile returns at once, holding no worker;
 * the run's end requeues the key, and the next reconcile gets the result. A run is kept by app key with the
 * step it was started for (`step`, an opaque identity the reconciler derives from the status), so a result
 * is only ever handed to a reconcile of that same step: asking for another step drops it and starts anew.
 *
 * Each run has a deadline (the app's Prometheus timeout): past it, every check is answered with an error
 * the planner judges as it judges a query that failed. Runs to one Prometheus host are bounded, so a
 * server that hangs holds at most `perHost` of them, and the apps of other servers never wait for it.
 */
export class AnalysisRuns {
  private readonly runs = new Map<string, Run>();
  private readonly hosts = new Map<string, LimitFunction>();
  private readonly perHost: number;

  constructor(private readonly options: AnalysisRunsOptions) {
    this.perHost = options.perHost ?? DEFAULT_ANALYSES_PER_HOST;
  }

  /** The analysis of `key`'s `step`: started by the first ask, `running` until it ends. */
  state(key: string, step: string, app: CanaryApp, checks: readonly AnalysisCheck[]): AnalysisState {
    const run = this.runs.get(key);
    if (run?.step === step) {
      // A failure is handed out once: the retry of the reconcile starts the analysis again.
      if (run.state.kind === "failed") this.runs.delete(key);
      return run.state;
    }
    this.start(key, step, structuredClone(app), checks);
    return { kind: "running" };
  }

  /** Forgets the app's run (the app is gone); a run still in flight ends unheard. */
  forget(key: string): void {
    this.runs.delete(key);
  }

  /** Analyses in flight, all hosts. */
  inFlight(): number {
    let n = 0;
    for (const run of this.runs.values()) if (run.state.kind === "running") n++;
    return n;
  }

  private start(key: string, step: string, app: CanaryApp, checks: readonly AnalysisCheck[]): void {
    const run: Run = { step, state: { kind: "running" } };
    this.runs.set(key, run);
    const log = this.options.log.child({ canaryapp: key });
    this.withDeadline(app, checks)
      .then(
        (results): AnalysisState => ({ kind: "done", results }),
        (error: unknown): AnalysisState => ({ kind: "failed", error: toError(error) }),
      )
      .then((state) => {
        // Superseded (another step asked, or the app went away): nobody is waiting for this result.
        if (this.runs.get(key) !== run) return;
        run.state = state;
        if (state.kind === "failed") log.warn({ err: state.error }, "analysis failed");
        this.options.requeue(key);
      })
      .catch((error: unknown) => log.error({ err: toError(error) }, "analysis completion failed"));
  }

  private withDeadline(app: CanaryApp, checks: readonly AnalysisCheck[]): Promise<MetricResult[]> {
    const deadlineMs = this.options.deadlineMs(app);
    const host = this.options.hostOf(app);
    let limit = this.hosts.get(host);
    if (limit === undefined) {
      limit = pLimit(this.perHost);
      this.hosts.set(host, limit);
    }
    const hostLimit = limit;
    const provider: AnalysisProvider = {
      run: (subject, rendered) =>
        new Promise<QueryOutcome[]>((resolve, reject) => {
          const timer = this.options.clock.schedule(() => {
            const busy =
              hostLimit.activeCount >= this.perHost ? ` (${host} had ${this.perHost} analyses in flight)` : "";
            const outcome: QueryOutcome = {
              kind: "error",
              message: `the analysis did not finish within ${deadlineMs / 1000}s${busy}`,
            };
            resolve(rendered.map(() => outcome));
          }, deadlineMs);
          // The slot is held until the provider settles, however late: the bound is on what the host serves.
          hostLimit(() => this.options.provider.run(subject, rendered)).then(
            (outcomes) => {
              timer.cancel();
              resolve(outcomes);
            },
            (error: unknown) => {
              timer.cancel();
              reject(toError(error));
            },
          );
        }),
    };
    return runAnalysis(app, checks, provider);
  }
}
