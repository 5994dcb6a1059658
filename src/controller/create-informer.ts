/**
 * Builds the informer of a resource: one over all namespaces, or one per namespace behind a single facade
 * (src/controller/multi-namespace-informer.ts) when the controller is limited to some.
 */
import type { Logger } from "pino";
import type { ListedMeta, Watcher } from "../kube/list-watch.js";
import type { Clock } from "../time/clock.js";
import type { Informer, ObjectWithMeta } from "./informer.js";
import { ListWatchInformer, type BackoffOptions } from "./list-watch-informer.js";
import { MultiNamespaceInformer } from "./multi-namespace-informer.js";

/** Identifies a resource collection: group ("" for core), version and plural. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
}

/** The collection path of a resource, in one namespace or (namespace undefined) across all. */
export function resourcePath(type: ResourceType, namespace?: string): string {
  const base = type.group === "" ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  return namespace === undefined
    ? `${base}/${type.plural}`
    : `${base}/namespaces/${encodeURIComponent(namespace)}/${type.plural}`;
}

export interface InformerOptions<T> {
  type: ResourceType;
  /** Namespaces to watch; empty or absent means all namespaces (one cluster-wide watch). */
  namespaces?: readonly string[];
  /**
   * Lists the collection in `namespace` (undefined: across all namespaces) with the label selector, handing each
   * item to `each` as it arrives (`KubeRest.listEach`, as src/kube/kinds.ts does), e.g.
   * `({ namespace, labelSelector, each }) => rest.listEach(deployments, { namespace, labelSelector }, each)`; a call
   * that returns a whole list is wrapped in `handedEach`, e.g.
   * `({ namespace, labelSelector, each }) => handedEach(apps.listNamespacedDeployment({ namespace: namespace ?? "", labelSelector }), each)`.
   */
  list: (args: { namespace?: string; labelSelector?: string; each: (item: T) => void }) => Promise<ListedMeta>;
  labelSelector?: string;
  /** See ListWatchOptions.fieldSelector: `list` applies it too. */
  fieldSelector?: string;
  watcher: Watcher;
  log: Logger;
  clock?: Clock;
  backoff?: BackoffOptions;
  /** See ListWatchOptions.transform. */
  transform?: (obj: T) => T;
  /** See ListWatchOptions.keep. */
  keep?: (obj: T) => boolean;
  /** See ListWatchOptions.labelled. */
  labelled?: (obj: T) => boolean;
}

/**
 * One informer over all namespaces, or one per namespace behind a single facade when `namespaces` names
 * some (so the controller needs list/watch rights only there).
 */
export function createInformer<T extends ObjectWithMeta>(options: InformerOptions<T>): Informer<T> {
  const make = (namespace: string | undefined): ListWatchInformer<T> =>
    new ListWatchInformer<T>({
      resource: options.type.group === "" ? options.type.plural : `${options.type.plural}.${options.type.group}`,
      path: resourcePath(options.type, namespace),
      list: (narrower, each) =>
        options.list({ namespace, labelSelector: joinSelectors(options.labelSelector, narrower), each }),
      labelSelector: options.labelSelector,
      ...(options.fieldSelector !== undefined ? { fieldSelector: options.fieldSelector } : {}),
      watcher: options.watcher,
      log: options.log,
      clock: options.clock,
      backoff: options.backoff,
      transform: options.transform,
      ...(options.keep !== undefined ? { keep: options.keep } : {}),
      ...(options.labelled !== undefined ? { labelled: options.labelled } : {}),
    });
  const namespaces = [...new Set(options.namespaces ?? [])];
  if (namespaces.length === 0) return make(undefined);
  return new MultiNamespaceInformer(new Map(namespaces.map((ns) => [ns, make(ns)])));
}

/** Both label selectors at once (an object must match each): their requirements joined by a comma. */
export function joinSelectors(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined || a === "") return b;
  if (b === undefined || b === "") return a;
  return `${a},${b}`;
}
