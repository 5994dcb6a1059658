/**
 * What a Service name reaches. A policy entry such as `*.svc` lets an app name any Service, and a Service's
 * authors decide where its name goes: an ExternalName Service resolves to any host they write, and a Service
 * without a selector reaches whatever addresses its hand-written Endpoints list. So a URL allowed only as a
 * Service name is used only while that Service exists, is of type ClusterIP and selects pods.
 *
 * The controller caches no Services but its own children, and an informer over every Service of the watched
 * namespaces (or of the cluster, where a Prometheus usually lives) would hold thousands of objects to answer
 * a few questions. So each Service is read with one GET when it is first needed (the controller's lookup is
 * wiring/service-lookup.ts) and kept for a short while: `current` (before anything is sent) answers from a
 * verdict at most `freshMs` old; `known` (the reconcile's synchronous vet) answers from the last verdict, and
 * refreshes it in the background once it is stale, telling `changed` the apps that asked when it changes.
 */
import type { ServiceName } from "./url-policy.js";

/** The part of a core/v1 Service that decides where its name leads. */
export interface ServiceFacts {
  type?: string | undefined;
  selector?: Record<string, string> | null | undefined;
  externalName?: string | undefined;
}

/** What a lookup found: the Service, none (404), or that the controller may not read it (403). */
export type ServiceLookupResult = { found: ServiceFacts } | { missing: true } | { forbidden: true };

/** Reads one Service; rejects when the API server gave no answer that decides (it is asked again later). */
export type ServiceLookup = (service: ServiceName) => Promise<ServiceLookupResult>;

/**
 * Why a Service's name may not be used as a destination, as the end of a sentence beginning with the
 * Service; undefined when it may: it exists, is of type ClusterIP (the default) and has a selector.
 */
export function serviceRefusal(result: ServiceLookupResult): string | undefined {
  if ("missing" in result) return "does not exist";
  if ("forbidden" in result) return "could not be read: the controller has no right to get Services in its namespace";
  const service = result.found;
  const type = service.type ?? "ClusterIP";
  if (type === "ExternalName") {
    return `is an ExternalName Service: its name resolves to ${service.externalName ?? "(none)"}, wherever that is`;
  }
  if (type !== "ClusterIP") return `is of type ${type}; only ClusterIP Services are used`;
  if (service.selector === undefined || service.selector === null || Object.keys(service.selector).length === 0) {
    return "has no selector: its Endpoints are written by hand and may name any address";
  }
  return undefined;
}

/** Thrown by `known` while a Service was never looked up: the caller tries again once it has been. */
export class ServiceNotKnownYet extends Error {
  override readonly name = "ServiceNotKnownYet";
  constructor(service: ServiceName) {
    super(`Service ${service.namespace}/${service.name}: looking it up before anything is sent to its name`);
  }
}

interface Entry {
  /** Why the Service may not be used (undefined: it may). */
  refusal: string | undefined;
  at: number;
  /** The apps (keys) that asked, told when the verdict changes. */
  askers: Set<string>;
  lookup: Promise<string | undefined> | undefined;
}

export interface ServiceVerdictsOptions {
  lookup: ServiceLookup;
  now: () => number;
  /** How old a verdict `current` still uses. Default 10 s. */
  freshMs?: number;
  /** Services remembered at most; the least recently asked about are forgotten. Default 2048. */
  maxEntries?: number;
  /** Told the apps that asked about a Service whose verdict was learned or changed in the background. */
  changed?: (askers: readonly string[]) => void;
  /** Told of a lookup that failed (it is tried again at the next question). */
  failed?: (service: ServiceName, error: unknown) => void;
}

/** The verdicts on Services as destinations, looked up on demand and kept for a short while. */
export class ServiceVerdicts {
  readonly #entries = new Map<string, Entry>();
  readonly #freshMs: number;
  readonly #maxEntries: number;

  constructor(private readonly options: ServiceVerdictsOptions) {
    this.#freshMs = options.freshMs ?? 10_000;
    this.#maxEntries = options.maxEntries ?? 2048;
  }

  /**
   * The last verdict on the Service (why it may not be used, or undefined), however old: a stale one is
   * refreshed in the background. Throws `ServiceNotKnownYet` (and starts the lookup) when there is none.
   */
  known(service: ServiceName, asker?: string): string | undefined {
    const entry = this.#entry(service, asker);
    if (entry.lookup === undefined && this.options.now() - entry.at > this.#freshMs) {
      this.#refresh(service, entry).catch(() => undefined);
    }
    if (entry.at === -Infinity) throw new ServiceNotKnownYet(service);
    return entry.refusal;
  }

  /** A verdict at most `freshMs` old, looked up when needed; rejects when the lookup failed. */
  async current(service: ServiceName, asker?: string): Promise<string | undefined> {
    const entry = this.#entry(service, asker);
    if (entry.lookup !== undefined) return entry.lookup;
    if (this.options.now() - entry.at <= this.#freshMs) return entry.refusal;
    return this.#refresh(service, entry);
  }

  #entry(service: ServiceName, asker: string | undefined): Entry {
    const key = `${service.namespace}/${service.name}`;
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { refusal: undefined, at: -Infinity, askers: new Set(), lookup: undefined };
    } else {
      // Re-inserted: the map's order is least recently asked first.
      this.#entries.delete(key);
    }
    this.#entries.set(key, entry);
    if (asker !== undefined) entry.askers.add(asker);
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries) break;
      this.#entries.delete(oldest);
    }
    return entry;
  }

  #refresh(service: ServiceName, entry: Entry): Promise<string | undefined> {
    const lookup = this.options.lookup(service).then(
      (result) => {
        const refusal = serviceRefusal(result);
        const learned = entry.at === -Infinity || refusal !== entry.refusal;
        entry.refusal = refusal;
        entry.at = this.options.now();
        entry.lookup = undefined;
        if (learned && entry.askers.size > 0) this.options.changed?.([...entry.askers]);
        return refusal;
      },
      (error: unknown) => {
        entry.lookup = undefined;
        this.options.failed?.(service, error);
        throw error;
      },
    );
    entry.lookup = lookup;
    return lookup;
  }
}
