import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { CanaryApp } from "./api/types.js";
import { GROUP, LABELS, MANAGED_BY_VALUE, PLURAL, VERSION } from "./api/types.js";
import type { ReconcileObserver } from "./canary/ports.js";
import { CanaryReconciler } from "./canary/reconciler.js";
import type { Config } from "./config.js";
import { Controller } from "./controller/controller.js";
import type { Informer, ObjectList, ObjectWithMeta, ResourceType } from "./controller/informer.js";
import { createInformer } from "./controller/informer.js";
import { keyFromLabel, objectKey } from "./controller/keys.js";
import { LeaderElector, leaseClientFor } from "./controller/leader-election.js";
import type { StopReason } from "./controller/leader-election.js";
import { deleteIfExists, patchMetadataAnnotations, patchStatus, serverSideApply } from "./kube/apply.js";
import type { KubeClients } from "./kube/client.js";
import { createClients, loadKubeConfig } from "./kube/client.js";
import { EventRecorder, eventClientFor } from "./kube/events.js";
import { createQueryRunner } from "./metrics/query-runner.js";
import { appsUsingSecret, prometheusAccess } from "./metrics/access.js";
import { credentialSecretsInformer } from "./kube/credential-secrets.js";
import { ISTIO_NETWORKING } from "./resources/istio.js";
import { istioRouter } from "./router/istio.js";
import type { ControllerMetrics } from "./server/metrics.js";

/** A running controller process (minus the HTTP server and signal handling, which main.ts adds). */
export interface RunningController {
  /** Caches synced and workers running (or a standby waiting for the lease). */
  ready(): boolean;
  isLeader(): boolean;
  /** Stops taking work, finishes in-flight reconciles, releases the lease. */
  stop(): Promise<void>;
  /** Resolves when the controller has stopped, with why. */
  done: Promise<StopReason>;
}

export interface StartOptions {
  config: Config;
  log: Logger;
  observer: ReconcileObserver;
  /** Receives reconcile durations and the queue depth. */
  metrics?: ControllerMetrics;
  now?: () => Date;
}

/** Kinds the controller reads through informers. Children are watched only when labelled as ours. */
const RESOURCES = {
  canaryApps: { group: GROUP, version: VERSION, plural: PLURAL },
  deployments: { group: "apps", version: "v1", plural: "deployments" },
  services: { group: "", version: "v1", plural: "services" },
  destinationRules: { ...ISTIO_NETWORKING, plural: "destinationrules" },
  virtualServices: { ...ISTIO_NETWORKING, plural: "virtualservices" },
} as const satisfies Record<string, ResourceType>;

const CHILD_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY_VALUE}`;

/** Wires clients, informers, the reconciler, the work-queue controller and leader election, and starts them. */
export function startController({
  config,
  log,
  observer,
  metrics,
  now = () => new Date(),
}: StartOptions): RunningController {
  const clients = createClients(loadKubeConfig(config.kubeconfig));
  const informer = <T extends ObjectWithMeta>(type: ResourceType, labelSelector?: string): Informer<T> =>
    createInformer<T>({
      type,
      namespaces: config.namespaces,
      labelSelector,
      list: (args) => listObjects<T>(clients, type, args),
      watcher: clients.watch,
      log: log.child({ informer: type.plural }),
    });

  const caches = {
    canaryApps: informer<CanaryApp & ObjectWithMeta>(RESOURCES.canaryApps),
    deployments: informer(RESOURCES.deployments, CHILD_SELECTOR),
    services: informer(RESOURCES.services, CHILD_SELECTOR),
    destinationRules: informer(RESOURCES.destinationRules, CHILD_SELECTOR),
    virtualServices: informer(RESOURCES.virtualServices, CHILD_SELECTOR),
  };
  // Only Secrets labelled as Prometheus credentials are listed, cached and used.
  const secrets = credentialSecretsInformer(
    clients,
    clients.watch,
    config.namespaces,
    log.child({ informer: "secrets" }),
  );
  const access = prometheusAccess({
    policyEntries: config.prometheusURLPolicy,
    defaultPrometheusURL: config.defaultPrometheusURL,
    secrets,
  });
  const recorder = new EventRecorder({ client: eventClientFor(clients.core), log });
  const reconciler = new CanaryReconciler({
    caches,
    writer: {
      apply: async (object) => {
        observer.wrote(object.kind, "apply");
        await serverSideApply(clients.objects, object as KubernetesObject);
      },
      remove: async (ref) => {
        observer.wrote(ref.kind, "delete");
        await deleteIfExists(clients.objects, ref);
      },
      replaceStatus: async (app, status) => {
        observer.wrote("CanaryApp", "status");
        const { name = "", namespace = "", resourceVersion } = app.metadata;
        const updated = (await patchStatus(
          clients.customObjects,
          { ...RESOURCES.canaryApps, namespace, name },
          status,
          {
            previous: app.status ?? {},
            ...(resourceVersion ? { resourceVersion } : {}),
          },
        )) as CanaryApp | undefined;
        return updated?.metadata.resourceVersion;
      },
      removeAnnotations: async (app, keys) => {
        observer.wrote("CanaryApp", "annotate");
        const { name = "", namespace } = app.metadata;
        await patchMetadataAnnotations(
          clients.objects,
          { apiVersion: `${GROUP}/${VERSION}`, kind: "CanaryApp", name, namespace },
          Object.fromEntries(keys.map((k) => [k, null])),
        );
      },
    },
    events: {
      record: (app, event) => {
        observer.wrote("Event", "event");
        return recorder.record(
          { apiVersion: `${GROUP}/${VERSION}`, kind: "CanaryApp", metadata: app.metadata },
          event.type,
          event.reason,
          event.message,
        );
      },
    },
    runQueries: createQueryRunner(
      {
        prometheusURL: config.defaultPrometheusURL,
        log: log.child({ component: "prometheus" }),
        vet: access.vet,
        allowRedirect: access.allowRedirect,
      },
      access.readSecret,
    ),
    vetPrometheus: access.vet,
    router: istioRouter,
    observer,
    log,
    now,
  });

  const controller = new Controller({
    name: "canaryapp",
    reconcile: (key) => reconciler.reconcile(key),
    workers: config.workers,
    log,
    ...(metrics ? { hooks: metrics.controllerHooks() } : {}),
  });
  metrics?.setQueueDepthSource(() => controller.queue.len());
  controller.watch(caches.canaryApps, objectKey);
  // A credentials Secret labelled, changed or removed: its apps are judged again.
  controller.addCache(secrets);
  const requeueUsers = (secret: Parameters<typeof appsUsingSecret>[1]): void => {
    const namespace = secret.metadata?.namespace;
    for (const key of appsUsingSecret(caches.canaryApps.list(namespace), secret)) controller.queue.add(key);
  };
  secrets.onAdd(requeueUsers);
  secrets.onUpdate(requeueUsers);
  secrets.onDelete(requeueUsers);
  for (const child of [caches.deployments, caches.services, caches.destinationRules, caches.virtualServices]) {
    controller.watch(child, keyFromLabel(LABELS.app));
  }

  if (!config.leaderElection.enabled) {
    const done = controller.run().then((): StopReason => "shutdown");
    return { ready: () => controller.ready(), isLeader: () => true, stop: () => controller.stop(), done };
  }

  const campaign = new AbortController();
  const elector = new LeaderElector({
    namespace: config.leaderElection.namespace,
    name: config.leaderElection.name,
    identity: config.leaderElection.identity,
    client: leaseClientFor(clients.coordination),
    log,
    onStartedLeading: (signal) => controller.run(signal),
    // A lost lease means another replica may already be acting: do not wait for in-flight reconciles to
    // finish their writes; `done` resolves "lost" at once and main.ts exits, so the replica restarts clean.
    // A shutdown, in contrast, drains (the lease is still held and renewed until the drain is over).
    onStoppedLeading: (reason) => (reason === "lost" ? void controller.stop() : controller.stop()),
  });
  const done = elector.run(campaign.signal);
  return {
    // A standby is ready: it is healthy and waiting to take over.
    ready: () => !elector.isLeader() || controller.ready(),
    isLeader: () => elector.isLeader(),
    stop: async () => {
      campaign.abort();
      await done;
      await controller.stop();
    },
    done,
  };
}

async function listObjects<T>(
  clients: KubeClients,
  type: ResourceType,
  { namespace, labelSelector }: { namespace?: string; labelSelector?: string },
): Promise<ObjectList<T>> {
  const selector = labelSelector === undefined ? {} : { labelSelector };
  if (type.group === GROUP || type.group === ISTIO_NETWORKING.group) {
    const ref = { group: type.group, version: type.version, plural: type.plural, ...selector };
    const list: unknown =
      namespace === undefined
        ? await clients.customObjects.listClusterCustomObject(ref)
        : await clients.customObjects.listNamespacedCustomObject({ ...ref, namespace });
    return list as ObjectList<T>;
  }
  if (type.plural === "deployments") {
    const list =
      namespace === undefined
        ? await clients.apps.listDeploymentForAllNamespaces(selector)
        : await clients.apps.listNamespacedDeployment({ namespace, ...selector });
    return list as unknown as ObjectList<T>;
  }
  if (type.plural === "services") {
    const list =
      namespace === undefined
        ? await clients.core.listServiceForAllNamespaces(selector)
        : await clients.core.listNamespacedService({ namespace, ...selector });
    return list as unknown as ObjectList<T>;
  }
  throw new Error(`no list function for ${type.plural}`);
}
