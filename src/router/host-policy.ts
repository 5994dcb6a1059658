/**
 * Which hosts an app's route may answer for and which gateways it may attach to. A VirtualService is
 * mesh-wide: a host of another namespace's Service takes over that Service's callers, and a shared ingress
 * gateway is the operator's, not a tenant's. So an app's route answers only for Services of its own
 * namespace unless the operator allows more (`--allowed-hosts`), and attaches to `mesh` and the gateways the
 * operator lists (`--allowed-gateways`). The ValidatingAdmissionPolicy in config/admission applies the same
 * rules at admission, with the same lists from its params ConfigMap; this check runs before any object is
 * written, whether or not that policy is installed. Pure.
 */
import type { CanaryApp } from "../api/types.js";

/** The cluster's DNS domain, as the routes are built (api/meta.ts `serviceFqdn`). */
const CLUSTER_DOMAIN = "cluster.local";

/** The operator's allowances, as given by the flags. */
export interface RoutePolicy {
  /** Host entries: `*` (any host), `*.example.com` (any name ending in `.example.com`), or a name. */
  readonly hosts: readonly string[];
  /** Gateway entries: `namespace/name`, or `namespace/*` for every gateway of a namespace. */
  readonly gateways: readonly string[];
}

export class RoutePolicyError extends Error {
  override readonly name = "RoutePolicyError";
}

/** Why an app's route may not be written as its spec says. */
export interface RouteRefusal {
  reason: "HostNotAllowed" | "GatewayNotAllowed";
  message: string;
}

const NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const HOST_ENTRY = /^(\*|(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?)$/;

/** Checks the flags' entries; throws `RoutePolicyError` naming the first one that is not understood. */
export function parseRoutePolicy(hosts: readonly string[], gateways: readonly string[]): RoutePolicy {
  const h = hosts.map((e) => e.trim().toLowerCase()).filter((e) => e !== "");
  const g = gateways.map((e) => e.trim()).filter((e) => e !== "");
  for (const entry of h) {
    if (!HOST_ENTRY.test(entry)) throw new RoutePolicyError(`"${entry}" is neither *, *.suffix nor a host name`);
  }
  for (const entry of g) {
    const [namespace, name, ...rest] = entry.split("/");
    if (rest.length > 0 || namespace === undefined || !NAME.test(namespace) || name === undefined) {
      throw new RoutePolicyError(`"${entry}" is not namespace/name or namespace/*`);
    }
    if (name !== "*" && !NAME.test(name)) throw new RoutePolicyError(`"${entry}" is not namespace/name or namespace/*`);
  }
  return { hosts: h, gateways: g };
}

/**
 * Whether `host` names a Service of `namespace`: `name`, `name.ns`, `name.ns.svc` or
 * `name.ns.svc.cluster.local` (Istio reads a short name as a Service of the route's own namespace).
 */
export function ownNamespaceHost(host: string, namespace: string): boolean {
  const labels = host.toLowerCase().replace(/\.$/, "").split(".");
  const [service, ns, ...rest] = labels;
  if (service === undefined || !NAME.test(service)) return false;
  if (ns === undefined) return true;
  if (ns !== namespace) return false;
  const suffix = rest.join(".");
  return suffix === "" || suffix === "svc" || suffix === `svc.${CLUSTER_DOMAIN}`;
}

function hostAllowed(host: string, entries: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  return entries.some((entry) => {
    if (entry === "*") return true;
    // `*.example.com` covers every name below example.com, a wildcard below it too (`*.api.example.com`).
    if (entry.startsWith("*.")) return name.endsWith(entry.slice(1));
    return name === entry;
  });
}

/** A gateway as `namespace/name` (a short name is the route's own namespace, as Istio reads it). */
function qualifiedGateway(gateway: string, namespace: string): string {
  return gateway.includes("/") ? gateway : `${namespace}/${gateway}`;
}

function gatewayAllowed(gateway: string, entries: readonly string[]): boolean {
  const [namespace] = gateway.split("/");
  return entries.some((entry) => entry === gateway || entry === `${namespace ?? ""}/*`);
}

/**
 * Why the app's route may not answer for its `spec.service.hosts` or attach to its `spec.service.gateways`,
 * or undefined when it may. Names the first entry at fault and the flag that would allow it.
 */
export function routeRefusal(app: CanaryApp, policy: RoutePolicy): RouteRefusal | undefined {
  const namespace = app.metadata.namespace ?? "default";
  const hosts = app.spec.service?.hosts ?? [];
  for (const [i, host] of hosts.entries()) {
    if (ownNamespaceHost(host, namespace) || hostAllowed(host, policy.hosts)) continue;
    return {
      reason: "HostNotAllowed",
      message:
        `spec.service.hosts[${i}] "${host}" is not a Service of namespace ${namespace} and not among the hosts ` +
        `the controller's operator allows (${listed(policy.hosts)}); no route was written. A route answers for ` +
        `its own namespace's Services (name, name.${namespace}, name.${namespace}.svc, ` +
        `name.${namespace}.svc.${CLUSTER_DOMAIN}); other hosts need --allowed-hosts`,
    };
  }
  const gateways = app.spec.service?.gateways ?? [];
  for (const [i, gateway] of gateways.entries()) {
    if (gateway === "mesh") continue;
    if (gatewayAllowed(qualifiedGateway(gateway, namespace), policy.gateways)) continue;
    return {
      reason: "GatewayNotAllowed",
      message:
        `spec.service.gateways[${i}] "${gateway}" is not among the gateways the controller's operator allows ` +
        `(${listed(policy.gateways)}); no route was written. A route attaches to the mesh, and to gateways ` +
        `listed in --allowed-gateways`,
    };
  }
  return undefined;
}

function listed(entries: readonly string[]): string {
  return entries.length === 0 ? "none" : entries.join(", ");
}
