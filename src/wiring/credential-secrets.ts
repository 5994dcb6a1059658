/**
 * The Secrets the controller may read: only those labelled as credentials (`canaryapp.io/credentials`, or
 * its older name `canaryapp.io/prometheus-credentials`), listed and watched with one label selector a
 * label (in the watched namespaces only, when the controller is given some), so no other Secret ever
 * reaches the controller's memory and it needs no `get` on Secrets.
 */
import type { V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Informer, ObjectWithMeta } from "../controller/informer.js";
import type { Watcher } from "../kube/list-watch.js";
import { createInformer } from "../controller/create-informer.js";
import { onAllSynced } from "../controller/multi-namespace-informer.js";
import { CREDENTIALS_SELECTORS } from "../analysis/providers/credentials.js";
import type { KubeRest } from "../kube/rest.js";

export type CredentialSecret = V1Secret & ObjectWithMeta;

export const SECRETS = { group: "", version: "v1", plural: "secrets" } as const;

/** An informer over the labelled credential Secrets of `namespaces` (empty: all), either label. */
export function credentialSecretsInformer(
  api: Pick<KubeRest, "listEach">,
  watcher: Watcher,
  namespaces: readonly string[],
  log: Logger,
): Informer<CredentialSecret> {
  return new EitherInformer(
    CREDENTIALS_SELECTORS.map((selector) => selectedSecrets(api, watcher, namespaces, selector, log)),
  );
}

function selectedSecrets(
  api: Pick<KubeRest, "listEach">,
  watcher: Watcher,
  namespaces: readonly string[],
  labelSelector: string,
  log: Logger,
): Informer<CredentialSecret> {
  return createInformer<CredentialSecret>({
    type: SECRETS,
    namespaces,
    labelSelector,
    list: ({ namespace, labelSelector, each }) =>
      api.listEach<CredentialSecret>(
        { ...SECRETS, namespace },
        labelSelector === undefined ? {} : { labelSelector },
        each,
      ),
    watcher,
    log,
  });
}

/**
 * Informers over disjoint-or-overlapping selections read as one: an object is found in the first that
 * holds it (a Secret with both labels is in both; `list` gives it once).
 */
export class EitherInformer<T extends ObjectWithMeta> implements Informer<T> {
  constructor(private readonly informers: readonly Informer<T>[]) {}

  start(): void {
    for (const informer of this.informers) informer.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  hasSynced(): boolean {
    return this.informers.every((i) => i.hasSynced());
  }

  stalled(): string | undefined {
    for (const informer of this.informers) {
      const reason = informer.stalled?.();
      if (reason !== undefined) return reason;
    }
    return undefined;
  }

  get(namespace: string, name: string): T | undefined {
    for (const informer of this.informers) {
      const found = informer.get(namespace, name);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  size(): number {
    return this.list().length;
  }

  list(namespace?: string): T[] {
    const seen = new Set<string>();
    return this.informers
      .flatMap((i) => i.list(namespace))
      .filter((o) => {
        const key = `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
  }

  onAdd(handler: (obj: T) => void): void {
    for (const informer of this.informers) informer.onAdd(handler);
  }

  onUpdate(handler: (obj: T, old: T) => void): void {
    for (const informer of this.informers) informer.onUpdate(handler);
  }

  onDelete(handler: (obj: T) => void): void {
    for (const informer of this.informers) informer.onDelete(handler);
  }

  onSynced(handler: () => void): void {
    onAllSynced(this.informers, () => this.hasSynced(), handler);
  }
}
