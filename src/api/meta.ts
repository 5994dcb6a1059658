import type { CanaryApp, Track } from "./types.js";
import { API_VERSION, KIND, LABELS, MANAGED_BY_VALUE } from "./types.js";

/** The parts of Kubernetes object metadata the builders set. */
export interface ChildMeta {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
  blockOwnerDeletion: boolean;
}

/** Name and namespace of a CanaryApp, required on anything the controller acts on. */
export function appRef(app: CanaryApp): { name: string; namespace: string } {
  const { name, namespace } = app.metadata;
  if (!name || !namespace) throw new Error("CanaryApp without metadata.name or metadata.namespace");
  return { name, namespace };
}

export const childNames = (appName: string) =>
  ({
    primary: `${appName}-primary`,
    secondary: `${appName}-secondary`,
    service: appName,
    destinationRule: appName,
    virtualService: appName,
    httpRoute: appName,
  }) as const;

export const deploymentName = (appName: string, track: Track): string => childNames(appName)[track];

/** The Service that selects one track's pods (the canary route's destination): `<name>-primary`, `<name>-secondary`. */
export const trackServiceName = (appName: string, track: Track): string => `${appName}-${track}`;

/** The track whose per-track Service `name` is (`<app>-primary`, `<app>-secondary`), or undefined. */
export function trackOfService(name: string | undefined): Track | undefined {
  if (name?.endsWith("-primary") === true) return "primary";
  if (name?.endsWith("-secondary") === true) return "secondary";
  return undefined;
}

/** The cluster-local DNS name of the app's Service, the host every route points at. */
export const serviceFqdn = (name: string, namespace: string): string => `${name}.${namespace}.svc.cluster.local`;

/** Labels that mark an object as this controller's child of one CanaryApp (the informers select on them). */
export function childLabels(appName: string, track?: Track): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY_VALUE,
    [LABELS.app]: appName,
    ...(track ? { [LABELS.track]: track } : {}),
  };
}

/**
 * A controller owner reference: the garbage collector removes the child with its CanaryApp, and
 * `blockOwnerDeletion` keeps a foreground delete of the app waiting until the children are gone.
 */
export function ownerReference(app: CanaryApp): OwnerReference {
  const { name } = appRef(app);
  const uid = app.metadata.uid;
  if (!uid) throw new Error(`CanaryApp ${name}: no metadata.uid to own children with`);
  return { apiVersion: API_VERSION, kind: KIND, name, uid, controller: true, blockOwnerDeletion: true };
}

export function childMeta(app: CanaryApp, name: string, track?: Track): ChildMeta {
  const { name: appName, namespace } = appRef(app);
  return { name, namespace, labels: childLabels(appName, track), ownerReferences: [ownerReference(app)] };
}
