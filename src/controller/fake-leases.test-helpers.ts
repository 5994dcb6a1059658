import type { ShardLeaseClient } from "./leader-election.js";
import { recordFromSpec, type Lease } from "./lease.js";
import { SHARD_LABELS, shareLeaseName } from "./shard-leases.js";

function conflict(): Error {
  return Object.assign(new Error("Operation cannot be fulfilled: the object has been modified"), { code: 409 });
}

/** A namespace's Leases in memory, with the API server's resourceVersion preconditions. */
export class FakeLeases implements ShardLeaseClient {
  readonly leases = new Map<string, Lease>();
  private rv = 0;
  writes = 0;
  lists = 0;
  /** When set, every replace waits for it first (a slow API server). */
  slowWrites: (() => Promise<void>) | undefined;
  /** Identities whose calls fail (a replica cut off from the API server). */
  readonly cutOff = new Set<string>();

  constructor(private readonly caller: () => string | undefined = () => undefined) {}

  private gate(): void {
    const who = this.caller();
    if (who !== undefined && this.cutOff.has(who)) throw new Error("connect ECONNREFUSED");
  }

  private store(lease: Lease): Lease {
    this.rv++;
    this.writes++;
    const stored = JSON.parse(
      JSON.stringify({ ...lease, metadata: { ...lease.metadata, resourceVersion: `${this.rv}` } }),
    ) as Lease;
    this.leases.set(lease.metadata?.name ?? "", stored);
    return structuredClone(stored);
  }

  get(_namespace: string, name: string): Promise<Lease | undefined> {
    const lease = this.leases.get(name);
    return Promise.resolve(lease ? structuredClone(lease) : undefined);
  }

  async list(_namespace: string, selector: string): Promise<Lease[]> {
    await Promise.resolve();
    this.gate();
    this.lists++;
    const [key, value] = selector.split("=");
    return [...this.leases.values()]
      .filter((l) => l.metadata?.labels?.[key ?? ""] === value)
      .map((l) => structuredClone(l));
  }

  async create(lease: Lease): Promise<Lease> {
    await Promise.resolve();
    this.gate();
    if (this.leases.has(lease.metadata?.name ?? "")) throw conflict();
    return this.store(lease);
  }

  async replace(lease: Lease): Promise<Lease> {
    await Promise.resolve();
    if (this.slowWrites) await this.slowWrites();
    this.gate();
    const current = this.leases.get(lease.metadata?.name ?? "");
    if (lease.metadata?.resourceVersion !== current?.metadata?.resourceVersion) throw conflict();
    return this.store(lease);
  }

  async delete(_namespace: string, name: string, resourceVersion: string | undefined): Promise<void> {
    await Promise.resolve();
    this.gate();
    const current = this.leases.get(name);
    if (current === undefined) return;
    if (resourceVersion !== undefined && current.metadata?.resourceVersion !== resourceVersion) throw conflict();
    this.leases.delete(name);
  }

  holderOf(share: number, shares: number, group = "group"): string | undefined {
    return recordFromSpec(this.leases.get(shareLeaseName(group, share, shares))?.spec).holderIdentity;
  }

  members(): number {
    return [...this.leases.values()].filter((l) => l.metadata?.labels?.[SHARD_LABELS.role] === "member").length;
  }
}
