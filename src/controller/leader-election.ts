import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { isConflict, isNotFound, toError } from "../kube/errors.js";
import type { KubeRest } from "../kube/rest.js";
import { abortable } from "./abortable.js";
import { sleep, systemClock, type Clock } from "../time/clock.js";
import {
  acquiredRecord,
  canAcquire,
  observeLease,
  recordFromSpec,
  releasedRecord,
  specFromRecord,
  type Lease,
  type LeaseObservation,
  type LeaseRecord,
} from "./lease.js";
import { monotonicNow } from "./monotonic.js";

/** The Lease reads and writes leader election makes; {@link leaseClientFor} implements them. */
export interface LeaseClient {
  /** The Lease, or undefined when it does not exist. */
  get(namespace: string, name: string): Promise<Lease | undefined>;
  /** Creates the Lease; 409 when someone created it first. */
  create(lease: Lease): Promise<Lease>;
  /** Replaces the Lease; 409 unless metadata.resourceVersion is still current. */
  replace(lease: Lease): Promise<Lease>;
}

const LEASES = { group: "coordination.k8s.io", version: "v1", plural: "leases" } as const;

/** The Lease calls shard election makes besides those of leader election. */
export interface ShardLeaseClient extends LeaseClient {
  /** The namespace's Leases matching a label selector. */
  list(namespace: string, labelSelector: string): Promise<Lease[]>;
  /** Deletes the Lease if it is still at `resourceVersion`; a missing Lease is not an error. */
  delete(namespace: string, name: string, resourceVersion: string | undefined): Promise<void>;
}

export function leaseClientFor(
  api: Pick<KubeRest, "get" | "create" | "replace" | "list" | "delete">,
): ShardLeaseClient {
  return {
    list: async (namespace, labelSelector) =>
      (await api.list<Lease>({ ...LEASES, namespace }, { labelSelector })).items,
    async delete(namespace, name, resourceVersion) {
      try {
        await api.delete(
          { ...LEASES, namespace, name },
          undefined,
          resourceVersion !== undefined ? { resourceVersion } : undefined,
        );
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
    async get(namespace, name) {
      try {
        return await api.get<Lease>({ ...LEASES, namespace, name });
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    create: (lease) => api.create<Lease>({ ...LEASES, namespace: lease.metadata?.namespace ?? "" }, lease),
    replace: (lease) =>
      api.replace<Lease>(
        { ...LEASES, namespace: lease.metadata?.namespace ?? "", name: lease.metadata?.name ?? "" },
        lease,
      ),
  };
}

/** Why leadership ended: the lease could not be kept, or the process is shutting down. */
export type StopReason = "lost" | "shutdown";

export interface LeaderElectionOptions {
  /** The Lease's namespace and name. */
  namespace: string;
  name: string;
  /** This replica's name in the Lease. Default: hostname + "_" + a random suffix. */
  identity?: string;
  /**
   * How long a lease is valid after its last renewal. Default 15 s. Others count it from when they saw the
   * renewal, by their own clocks (`hasExpired`).
   */
  leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it gives up leading. Default 10 s. */
  renewDeadlineMs?: number;
  /** Time between attempts to acquire or renew. Default 2 s. */
  retryPeriodMs?: number;
  /** On shutdown, hand the lease over at once (see `releasedRecord`). Default true. */
  releaseOnShutdown?: boolean;
  client: LeaseClient;
  log: Logger;
  clock?: Clock;
  /** Source of randomness for the acquire jitter; injectable for tests. */
  random?: () => number;
  /**
   * Called once this replica holds the lease; `signal` aborts when leadership ends. Not awaited by the
   * elector: start the controller here.
   */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /**
   * Called when leadership ends and awaited. On "shutdown" the lease is still renewed while it runs (so
   * drain the controller here), then released. On "lost" another replica may already lead: stop all work
   * at once; exiting the process so that it restarts clean is what client-go users do, and the caller's
   * choice.
   */
  onStoppedLeading: (reason: StopReason) => void | Promise<void>;
  /** Called when another replica is seen holding the lease. */
  onNewLeader?: (identity: string) => void;
  /** The sharding epoch (ADR 0024; {@link EpochGate}), asked while campaigning. */
  gate?: LeadGate;
}

/** What a campaigning replica asks of the sharding epoch. Neither call throws. */
export interface LeadGate {
  /**
   * Asked "acquire" before a try to take a lease that is free, ours or expired, and "confirm" once taken,
   * before leading (a read made after the write). False: do not take it, or hand it back.
   */
  mayLead(phase: "acquire" | "confirm"): Promise<boolean>;
  /** Called instead while the lease is held by another replica: the standby stays a member of its count. */
  standBy(): Promise<void>;
}

/** client-go's JitterFactor for the acquire loop: retries are spread over retryPeriod · [1, 2.2). */
const JITTER_FACTOR = 1.2;

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's `leaderelection` package: try to
 * acquire every retryPeriod (with jitter) until the lease is free, ours or expired — expired meaning it has not
 * changed for its duration since this replica first read it so, by this replica's own clock; then renew every
 * retryPeriod, and give up leading when no renewal succeeded for renewDeadline. Every write replaces the
 * Lease at the resourceVersion just read, so of two replicas racing for an expired lease exactly one wins
 * (the other gets 409 Conflict and keeps waiting).
 */
export class LeaderElector {
  readonly identity: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly clock: Clock;
  /** Times durations: the lease's expiry as others see it, and this replica's renew deadline. */
  private readonly elapsed: () => number;
  private readonly random: () => number;
  private readonly log: Logger;
  private leading = false;
  private observedHolder: string | undefined;
  /** The Lease as last read, and since when it has read the same. */
  private observed: LeaseObservation | undefined;
  /** When (monotonic) the last successful attempt began: a write lands after it is sent, never before. */
  private wroteAt = 0;

  constructor(private readonly options: LeaderElectionOptions) {
    this.identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.clock = options.clock ?? systemClock;
    this.elapsed = monotonicNow(this.clock);
    this.random = options.random ?? Math.random;
    this.log = options.log.child({ lease: `${options.namespace}/${options.name}`, identity: this.identity });
    // The same checks as client-go's NewLeaderElector: otherwise a leader could lose the lease before it
    // notices, and two replicas would lead at once.
    if (this.leaseDurationMs <= this.renewDeadlineMs) {
      throw new Error(`leader election: leaseDuration (${this.leaseDurationMs} ms) must exceed renewDeadline`);
    }
    if (this.renewDeadlineMs <= JITTER_FACTOR * this.retryPeriodMs) {
      throw new Error(`leader election: renewDeadline (${this.renewDeadlineMs} ms) must exceed 1.2 × retryPeriod`);
    }
    if (this.identity === "") throw new Error("leader election: identity must not be empty");
  }

  /** True while this replica holds the lease. */
  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until elected, leads until the lease is lost or `signal` aborts, and resolves with why it
   * stopped. Resolves "shutdown" without calling any callback if aborted before it was elected.
   */
  async run(signal: AbortSignal): Promise<StopReason> {
    this.log.info("campaigning for leadership");
    while (!signal.aborted) {
      const attempt = this.campaign();
      // A hanging API call must not delay shutdown while campaigning...
      if ((await abortable(attempt, signal)) === true) break;
      // ...but if it wins the lease after all, hand it straight back.
      if (signal.aborted) void attempt.then((won) => (won ? this.release() : undefined));
      await sleep(this.clock, this.retryPeriodMs * (1 + this.random() * JITTER_FACTOR), signal);
    }
    if (signal.aborted) return "shutdown";

    this.leading = true;
    this.log.info("became leader");
    const leadership = new AbortController();
    void Promise.resolve()
      .then(() => this.options.onStartedLeading(leadership.signal))
      .catch((err: unknown) => this.log.error({ err: toError(err) }, "onStartedLeading failed"));

    const renewals = new AbortController();
    const renewing = this.renewLoop(renewals.signal);
    const shutdown = new Promise<"shutdown">((resolve) => {
      if (signal.aborted) resolve("shutdown");
      signal.addEventListener("abort", () => resolve("shutdown"), { once: true });
    });
    const first = await Promise.race([renewing, shutdown]);

    if (first === "lost") {
      leadership.abort();
      await this.stopped("lost");
      return "lost";
    }
    // Shutting down: keep renewing while the caller drains, so no successor starts before it has finished.
    leadership.abort();
    await this.stopped("shutdown");
    renewals.abort();
    const ended = await renewing;
    this.leading = false;
    if (ended !== "lost" && this.options.releaseOnShutdown !== false) await this.release();
    return "shutdown";
  }

  /**
   * Hands the lease over if this replica holds it: clears the holder and sets a one-second duration.
   * Never throws (a failed release only means the successor waits for expiry).
   */
  async release(): Promise<void> {
    try {
      const lease = await this.options.client.get(this.options.namespace, this.options.name);
      if (lease === undefined) return;
      const record = recordFromSpec(lease.spec);
      if (record.holderIdentity !== this.identity) return;
      await this.options.client.replace({ ...lease, spec: specFromRecord(releasedRecord(record, this.clock.now())) });
      this.log.info("released the lease");
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not release the lease; it will expire");
    }
  }

  private async stopped(reason: StopReason): Promise<void> {
    if (reason === "lost") this.leading = false;
    try {
      await this.options.onStoppedLeading(reason);
    } catch (error) {
      this.log.error({ err: toError(error), reason }, "onStoppedLeading failed");
    }
  }

  /**
   * Renews every retryPeriod until `stop` aborts ("stopped") or no renewal succeeds for renewDeadline ("lost").
   * The deadline counts from when the last successful renewal was sent: the others count the lease duration from
   * a read after it was written, so this replica stops leading before any of them may take the lease.
   */
  private async renewLoop(stop: AbortSignal): Promise<"lost" | "stopped"> {
    let lastRenewal = this.wroteAt;
    for (;;) {
      await sleep(this.clock, this.retryPeriodMs, stop);
      if (stop.aborted) return "stopped";
      const deadline = lastRenewal + this.renewDeadlineMs;
      const renewed = await this.attemptBefore(deadline);
      if (stop.aborted && renewed) return "stopped";
      if (renewed) {
        lastRenewal = this.wroteAt;
        continue;
      }
      if (this.observedHolder !== undefined && this.observedHolder !== this.identity) {
        this.log.error({ holder: this.observedHolder }, "lost leadership: another replica holds the lease");
        this.leading = false;
        return "lost";
      }
      if (this.elapsed() >= deadline) {
        this.log.error({ renewDeadlineMs: this.renewDeadlineMs }, "lost leadership: could not renew the lease in time");
        this.leading = false;
        return "lost";
      }
    }
  }

  /** One attempt that must finish before `deadline`; a slow API server counts as a failed attempt. */
  private async attemptBefore(deadline: number): Promise<boolean> {
    const remaining = deadline - this.elapsed();
    if (remaining <= 0) return false;
    const timeout = new AbortController();
    const timedOut = sleep(this.clock, remaining, timeout.signal).then(() => false);
    const result = await Promise.race([this.attempt(), timedOut]);
    timeout.abort();
    return result;
  }

  /**
   * One try to take the lease while campaigning, within the sharding epoch when there is a gate: it may take
   * it, and once taken it may lead (else the lease is handed straight back).
   */
  private async campaign(): Promise<boolean> {
    const gate = this.options.gate;
    if (gate === undefined) return await this.attempt();
    // The epoch is asked (a list of the group's Leases) only when the lease could be taken: a standby behind a
    // live leader reads the lease alone, as without a gate, and renews its member Lease when that is due.
    if (!(await this.acquirable())) {
      await gate.standBy();
      return false;
    }
    if (!(await gate.mayLead("acquire"))) return false;
    if (!(await this.attempt())) return false;
    if (await gate.mayLead("confirm")) return true;
    this.log.info("took the lease, but the sharding epoch is not 1 share: handing it back");
    await this.release();
    return false;
  }

  /** Whether the lease is free, ours or expired, as read now. False on an error (logged). */
  private async acquirable(): Promise<boolean> {
    const { namespace, name, client } = this.options;
    try {
      const lease = await client.get(namespace, name);
      if (lease === undefined) return true;
      const readAt = this.elapsed();
      this.observed = observeLease(this.observed, lease, readAt);
      this.observe(recordFromSpec(lease.spec).holderIdentity);
      return canAcquire(this.observed, this.identity, readAt);
    } catch (error) {
      this.log.warn({ err: toError(error, `Lease ${namespace}/${name}`) }, "could not read the lease");
      return false;
    }
  }

  /** One try to acquire or renew. False when someone else holds the lease or won a race; errors are logged. */
  private async attempt(): Promise<boolean> {
    const { namespace, name, client } = this.options;
    const began = this.elapsed();
    // Written into the Lease for people to read; no replica compares it with its own clock.
    const now = this.clock.now();
    try {
      const lease = await client.get(namespace, name);
      if (lease === undefined) {
        this.observed = undefined;
        await client.create({
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { namespace, name },
          spec: specFromRecord(acquiredRecord(undefined, this.identity, now, this.leaseDurationMs)),
        });
        this.wroteAt = began;
        this.observe(this.identity);
        return true;
      }
      const readAt = this.elapsed();
      this.observed = observeLease(this.observed, lease, readAt);
      const record = recordFromSpec(lease.spec);
      this.observe(record.holderIdentity);
      if (!canAcquire(this.observed, this.identity, readAt)) return false;
      const next: LeaseRecord = acquiredRecord(record, this.identity, now, this.leaseDurationMs);
      // The read resourceVersion stays in metadata: if anyone wrote since, this fails with 409.
      await client.replace({ ...lease, spec: specFromRecord(next) });
      this.wroteAt = began;
      this.observe(this.identity);
      return true;
    } catch (error) {
      if (isConflict(error)) {
        this.log.debug("lease changed while acquiring; another replica won");
        return false;
      }
      this.log.warn({ err: toError(error, `Lease ${namespace}/${name}`) }, "could not acquire or renew the lease");
      return false;
    }
  }

  private observe(holder: string | undefined): void {
    if (holder === this.observedHolder) return;
    this.observedHolder = holder;
    if (holder !== undefined && holder !== this.identity) {
      this.log.info({ holder }, "another replica leads");
      this.options.onNewLeader?.(holder);
    }
  }
}
