import type { CanaryApp } from "../api/types.js";
import { ADOPT_ANNOTATION, KIND } from "../api/types.js";
import { childNames } from "../api/meta.js";

/** What is read of an object that already exists under a child's name. */
export interface ExistingObject {
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    annotations?: Record<string, string>;
    ownerReferences?: { uid?: string; controller?: boolean; kind?: string; name?: string }[];
  };
}

/**
 * Why an object that already exists under a child's name may not be taken over by `app`, or undefined when
 * it may: it does not exist, this CanaryApp controls it already, or its owner handed it over with the
 * annotation `canaryapp.io/adopt=<CanaryApp name>`. A user's Service, VirtualService, DestinationRule or
 * Deployment that merely shares the name is never changed (server-side apply would replace its selector or
 * routes, and the owner reference would have it garbage-collected with the CanaryApp).
 */
export function takeOverRefusal(existing: ExistingObject | undefined, app: CanaryApp): string | undefined {
  if (existing === undefined) return undefined;
  const meta = existing.metadata ?? {};
  const controller = meta.ownerReferences?.find((ref) => ref.controller === true);
  if (controller?.uid !== undefined && controller.uid === app.metadata.uid) return undefined;
  const appName = app.metadata.name ?? "";
  if (meta.annotations?.[ADOPT_ANNOTATION] === appName) return undefined;
  const kind = existing.kind ?? "object";
  const where = `${meta.namespace ?? app.metadata.namespace ?? ""}/${meta.name ?? ""}`;
  const owner =
    controller !== undefined
      ? `it is controlled by ${controller.kind ?? "another object"} ${controller.name ?? ""}`
      : "it is not ours";
  return (
    `${kind} ${where} already exists and ${owner}, so it is left unchanged; to hand it over to this CanaryApp: ` +
    `kubectl -n ${meta.namespace ?? app.metadata.namespace ?? ""} annotate ${kind.toLowerCase()} ${meta.name ?? ""} ${ADOPT_ANNOTATION}=${appName}`
  );
}

/** The names an app's children take, whatever their kind: `<name>`, `<name>-primary`, `<name>-secondary`. */
export function reservedNames(appName: string): string[] {
  const names = childNames(appName);
  return [...new Set(Object.values(names))];
}

/** What is read of another CanaryApp of the namespace. */
export interface AppIdentity {
  metadata: { name?: string; uid?: string; creationTimestamp?: Date | string };
}

/**
 * The names of the only apps whose children can share a name with `appName`'s: a name reserved by both
 * apps is either one app's own name or one app's name with a track suffix, so every clash is found by
 * looking up a handful of names instead of comparing with every app of the namespace.
 */
export function clashCandidates(appName: string): string[] {
  const candidates = new Set<string>();
  for (const name of reservedNames(appName)) {
    candidates.add(name);
    for (const suffix of TRACK_SUFFIXES) if (name.endsWith(suffix)) candidates.add(name.slice(0, -suffix.length));
  }
  candidates.delete(appName);
  return [...candidates].filter((name) => name !== "");
}

const TRACK_SUFFIXES = ["-primary", "-secondary"] as const;

/** Whether `a` came before `b`: the earlier creation, and by name when both were created in the same second. */
function earlier(a: AppIdentity, b: AppIdentity): boolean {
  const at = (app: AppIdentity) => new Date(app.metadata.creationTimestamp ?? 0).getTime();
  if (at(a) !== at(b)) return at(a) < at(b);
  return (a.metadata.name ?? "") < (b.metadata.name ?? "");
}

/** An app that may not run because an earlier app of its namespace reserved a name its children need. */
export interface NameClash {
  reason: "NameTaken";
  message: string;
}

/**
 * Why `app` may not write any child because another app of its namespace, created earlier, needs one of the
 * same names (`web` owns the Service `web-primary`, which an app named `web-primary` would take for its own
 * Service); undefined when no earlier app does. The later app is the one refused, so an app that runs is
 * never disturbed by one created after it. `lookup` finds a CanaryApp of the namespace by name.
 */
export function nameClash(app: CanaryApp, lookup: (name: string) => AppIdentity | undefined): NameClash | undefined {
  const name = app.metadata.name ?? "";
  const mine = new Set(reservedNames(name));
  for (const candidate of clashCandidates(name)) {
    const other = lookup(candidate);
    if (other === undefined || other.metadata.uid === app.metadata.uid || !earlier(other, app)) continue;
    const shared = reservedNames(candidate).filter((n) => mine.has(n));
    if (shared.length === 0) continue;
    return {
      reason: "NameTaken",
      message:
        `CanaryApp ${candidate}, created earlier in namespace ${app.metadata.namespace ?? ""}, owns the ` +
        `name${shared.length > 1 ? "s" : ""} ${shared.join(", ")} that this app's children would take ` +
        `(an app named N owns N, N-primary and N-secondary); nothing was written. Rename this app`,
    };
  }
  return undefined;
}

/**
 * Why a child that the caches hold (it carries the controller's label) may not be written by `app`: it is
 * controlled by another CanaryApp that still exists and was created earlier (the name is that app's, as
 * `nameClash` says). A child of an earlier app of the same name (deleted and created again, its children not
 * yet collected) is the app's own to take, and so is one that a later app wrote before either app's cache
 * showed the other (that app is refused now, and leaves the name to this one).
 */
export function ownedByAnotherApp(
  existing: ExistingObject,
  app: CanaryApp,
  lookup: (name: string) => AppIdentity | undefined,
): string | undefined {
  const meta = existing.metadata ?? {};
  const controller = meta.ownerReferences?.find((ref) => ref.controller === true);
  if (controller?.kind !== KIND || controller.uid === undefined || controller.uid === app.metadata.uid) {
    return undefined;
  }
  const owner = controller.name === undefined ? undefined : lookup(controller.name);
  if (owner === undefined || owner.metadata.uid !== controller.uid || !earlier(owner, app)) return undefined;
  return (
    `${existing.kind ?? "object"} ${meta.namespace ?? ""}/${meta.name ?? ""} belongs to CanaryApp ` +
    `${controller.name ?? ""}, so it is left unchanged; this app may not take another app's children`
  );
}
