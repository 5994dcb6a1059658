/**
 * The Secrets the controller may read: only those labelled as Prometheus credentials, listed and watched
 * with that label selector (in the watched namespaces only, when the controller is given some), so no
 * other Secret ever reaches the controller's memory and it needs no `get` on Secrets.
 */
import type { V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Informer, ObjectWithMeta, Watcher } from "../controller/informer.js";
import { createInformer } from "../controller/informer.js";
import { CREDENTIALS_SELECTOR } from "../metrics/credentials.js";
import type { KubeClients } from "./client.js";

export type CredentialSecret = V1Secret & ObjectWithMeta;

export const SECRETS = { group: "", version: "v1", plural: "secrets" } as const;

/** An informer over the labelled credential Secrets of `namespaces` (empty: all). */
export function credentialSecretsInformer(
  clients: Pick<KubeClients, "core">,
  watcher: Watcher,
  namespaces: readonly string[],
  log: Logger,
): Informer<CredentialSecret> {
  return createInformer<CredentialSecret>({
    type: SECRETS,
    namespaces,
    labelSelector: CREDENTIALS_SELECTOR,
    list: async ({ namespace, labelSelector }) => {
      const selector = labelSelector === undefined ? {} : { labelSelector };
      return namespace === undefined
        ? await clients.core.listSecretForAllNamespaces(selector)
        : await clients.core.listNamespacedSecret({ namespace, ...selector });
    },
    watcher,
    log,
  });
}
