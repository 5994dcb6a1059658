import { withDefaults } from "../api/defaults.js";
import type { CanaryApp, MetricResult } from "../api/types.js";
import type { AnalysisCheck } from "../analysis/checks.js";
import { analysisChecks } from "../analysis/checks.js";
import { at } from "./fixtures.test-helpers.js";
import { analysisDue, plan } from "./planner.js";
import { childrenApplied } from "./reported.js";
import type { Observation, Plan, PlanInput, Weights } from "./types.js";

interface FakeDeployment {
  image: string;
  replicas: number;
  /** Seconds (on the world's clock) at which its rollout completes. */
  readyAt: number;
}

/** What the checks return when the analysis runs. */
export type Analyst = (checks: AnalysisCheck[], world: FakeWorld) => MetricResult[];

export const allPass: Analyst = (checks) =>
  checks.map((c) => ({
    name: c.name,
    kind: c.mode,
    value: 100,
    passed: true,
    reason: "ok",
    ...(c.min !== undefined ? { min: c.min } : {}),
  }));

/** Ways the world may lag behind or lie to the controller, switched on and off by tests. */
export interface Quirks {
  /** Report the secondary with this availability regardless of its rollout. */
  secondaryAvailable?: boolean;
  /** The route is not updated when the plan is applied (a stale or slow VirtualService). */
  staleRoute?: boolean;
  /** Report no route at all. */
  routeMissing?: boolean;
  /** The controller dies right after persisting the status: nothing is applied. */
  crashAfterPersist?: boolean;
  /**
   * The API server refuses the route's write with this message (an admission policy), or undefined when
   * it takes it. A refused route stops the apply where it is: the workloads after it are not applied
   * either (resources/children.ts applies the route before them).
   */
  refuseRoute?: (weights: Weights, world: FakeWorld) => string | undefined;
}

/** One reconcile as the fake world saw it. */
export interface Step {
  time: number;
  input: PlanInput;
  plan: Plan;
  analysed: boolean;
}

/**
 * A cluster that obeys plans: Deployments become available `readyDelay` seconds after they change, the
 * route takes the planned weights, annotations the plan consumed disappear. The controller it runs is the
 * reconciler's sequence: observe → analysisDue → (checks) → plan → persist status → act.
 */
export class FakeWorld {
  time = 0;
  primary: FakeDeployment | null = null;
  secondary: FakeDeployment | null = null;
  route: Weights | null = null;
  quirks: Quirks = {};
  readonly steps: Step[] = [];
  /** Every change of the route as applied (not as planned), with the time it took effect. */
  readonly routeLog: { time: number; weights: Weights }[] = [];

  constructor(
    public app: CanaryApp,
    public readyDelay = 5,
    public analyst: Analyst = allPass,
  ) {}

  /** A primary already running `image`, adopted or promoted earlier. */
  withPrimary(image: string): this {
    this.primary = { image, replicas: this.app.spec.replicas ?? 1, readyAt: 0 };
    this.setRoute({ primary: 100, secondary: 0 });
    return this;
  }

  observe(): Observation {
    const view = (d: FakeDeployment | null) =>
      d === null ? null : { image: d.image, replicas: d.replicas, available: this.time >= d.readyAt, readyReplicas: 0 };
    const secondary = view(this.secondary);
    if (secondary !== null && this.quirks.secondaryAvailable !== undefined) {
      secondary.available = this.quirks.secondaryAvailable;
    }
    return {
      primary: view(this.primary),
      secondary,
      routedWeights: this.quirks.routeMissing ? null : this.route === null ? null : { ...this.route },
    };
  }

  setImage(image: string): void {
    if (this.app.spec.image === image) return;
    this.app = structuredClone(this.app);
    this.app.spec.image = image;
    this.app.metadata.generation = (this.app.metadata.generation ?? 1) + 1;
  }

  annotate(key: string, value: string | undefined): void {
    this.app = structuredClone(this.app);
    const annotations = { ...this.app.metadata.annotations };
    if (value === undefined) delete annotations[key];
    else annotations[key] = value;
    this.app.metadata.annotations = annotations;
  }

  reconcile(): Step {
    const observed = this.observe();
    const spec = withDefaults(this.app.spec);
    const now = at(this.time);
    const analysed = analysisDue({ app: this.app, spec, observed, now });
    const input: PlanInput = {
      app: this.app,
      spec,
      observed: analysed ? { ...observed, analysis: this.analyst(analysisChecks(spec), this) } : observed,
      now,
    };
    const result = plan(input);
    const step = { time: this.time, input, plan: result, analysed };
    this.steps.push(step);
    // Write-ahead: the status is persisted first, then the world is made to match it.
    this.app = { ...this.app, status: structuredClone(result.status) };
    if (!this.quirks.crashAfterPersist) this.act(result);
    return step;
  }

  private act(p: Plan): void {
    // The annotations are removed after the status write, before the children are applied.
    this.removeAnnotations(p);
    const changed = JSON.stringify(this.route) !== JSON.stringify(p.weights);
    const refusal = changed && !this.quirks.staleRoute ? this.quirks.refuseRoute?.(p.weights, this) : undefined;
    // As the reconciler does after the apply: ChildrenApplied records the refusal, or that it is over.
    const status = childrenApplied(this.app.status ?? {}, refusal, at(this.time));
    if (status !== this.app.status) this.app = { ...this.app, status };
    if (refusal !== undefined) return;
    if (!this.quirks.staleRoute) this.setRoute(p.weights);
    this.primary = this.rollOut(this.primary, p.primary);
    this.secondary = p.secondary === null ? null : this.rollOut(this.secondary, p.secondary);
  }

  private removeAnnotations(p: Plan): void {
    if (p.removeAnnotations.length > 0) {
      const annotations = { ...this.app.metadata.annotations };
      for (const key of p.removeAnnotations) delete annotations[key];
      this.app = { ...this.app, metadata: { ...this.app.metadata, annotations } };
    }
  }

  private setRoute(weights: Weights): void {
    const last = this.routeLog.at(-1)?.weights;
    // The mirror and A/B phases change the route as much as a weight does.
    if (JSON.stringify(last) !== JSON.stringify(weights)) {
      this.routeLog.push({ time: this.time, weights: { ...weights } });
    }
    this.route = { ...weights };
  }

  private rollOut(current: FakeDeployment | null, wanted: { image: string; replicas: number }): FakeDeployment {
    if (current !== null && current.image === wanted.image && current.replicas === wanted.replicas) return current;
    return { ...wanted, readyAt: this.time + this.readyDelay };
  }

  /**
   * Runs the controller as its watches and requeues would: again at once after anything it changed,
   * when a Deployment finishes rolling out, or when the plan asked to be requeued; stops at rest.
   */
  runToRest(maxReconciles = 2000): void {
    this.runUntil(Infinity, maxReconciles);
  }

  /** As runToRest, but stops before the first wake-up later than `time` (seconds on the world's clock). */
  runUntil(time: number, maxReconciles = 2000): void {
    for (let i = 0; i < maxReconciles; i++) {
      const before = JSON.stringify([this.app, this.primary, this.secondary, this.route]);
      const { plan: p } = this.reconcile();
      const changed = JSON.stringify([this.app, this.primary, this.secondary, this.route]) !== before;
      if (changed) continue;
      const wakeups = [
        ...(p.requeueAfterSeconds !== undefined ? [this.time + p.requeueAfterSeconds] : []),
        ...[this.primary, this.secondary].flatMap((d) => (d !== null && d.readyAt > this.time ? [d.readyAt] : [])),
      ];
      if (wakeups.length === 0 || Math.min(...wakeups) > time) return;
      this.time = Math.min(...wakeups);
    }
    throw new Error(`no rest after ${maxReconciles} reconciles`);
  }

  /** The secondary weights the route carried, one entry per change. */
  routedHistory(): number[] {
    const seen: number[] = [];
    for (const step of this.steps) {
      const w = step.plan.weights.secondary;
      if (seen.at(-1) !== w) seen.push(w);
    }
    return seen;
  }
}
