import type { CoreV1Event, KubernetesObject } from "@kubernetes/client-node";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { CanaryApp, Mesh } from "../api/types.js";
import { GROUP, LABELS, PLURAL, VERSION } from "../api/types.js";
import { createClients, loadKubeConfig, type KubeClients } from "../kube/client.js";
import { childNames } from "../api/meta.js";
import { GATEWAY_API } from "../router/gateway-api.js";
import { ISTIO_NETWORKING } from "../router/istio.js";
import { controlAnnotations, type AnnotationPatch, type Control } from "./controls.js";
import type { Snapshot, VirtualServiceView } from "./view.js";

/** kubectl's connection flags, as every verb takes them. */
export interface ConnectionFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
}

/** The field manager of the plugin's writes, so managedFields say who changed what. */
export const CLI_FIELD_MANAGER = "kubectl-canaryapp";

const MERGE_PATCH = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** Sets (string) or removes (null) annotations of a CanaryApp with a JSON merge patch; returns the patched app. */
export async function annotateApp(
  clients: KubeClients,
  namespace: string,
  name: string,
  annotations: AnnotationPatch,
): Promise<CanaryApp> {
  return (await clients.customObjects.patchNamespacedCustomObject(
    {
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      name,
      body: { metadata: { annotations } },
      fieldManager: CLI_FIELD_MANAGER,
    },
    MERGE_PATCH,
  )) as CanaryApp;
}

/**
 * A control, as `kubectl canaryapp promote|abort|retry|pause|resume|approve NAME` and the dashboard's buttons
 * run it: the app is read (retry's image defaults to its spec.image), then the control's annotation written, with
 * the rights of whoever the clients authenticate as.
 */
export async function runControl(
  clients: KubeClients,
  namespace: string,
  name: string,
  control: Control,
  retryImage?: string,
): Promise<CanaryApp> {
  const app = (await clients.customObjects.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: PLURAL,
    namespace,
    name,
  })) as CanaryApp;
  return annotateApp(clients, namespace, name, controlAnnotations(control, app, retryImage));
}

/** A connection to one namespace of one cluster, resolved as kubectl resolves it. */
export class Cluster {
  readonly namespace: string;
  readonly clients: KubeClients;

  constructor(flags: ConnectionFlags) {
    const kc = loadKubeConfig(flags.kubeconfig);
    if (flags.context !== undefined) {
      if (kc.getContextObject(flags.context) === null) {
        throw new Error(`context was not found for specified context: ${flags.context}`);
      }
      kc.setCurrentContext(flags.context);
    }
    this.namespace = flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? "default";
    this.clients = createClients(kc);
  }

  private ref(name: string) {
    return { group: GROUP, version: VERSION, plural: PLURAL, namespace: this.namespace, name };
  }

  async getApp(name: string): Promise<CanaryApp> {
    return (await this.clients.customObjects.getNamespacedCustomObject(this.ref(name))) as CanaryApp;
  }

  /** Sets (string) or removes (null) annotations with a JSON merge patch; returns the patched app. */
  annotate(name: string, annotations: AnnotationPatch): Promise<CanaryApp> {
    return annotateApp(this.clients, this.namespace, name, annotations);
  }

  /** Runs one of the controls (promote, abort, …) on the app; returns the patched app. */
  control(name: string, control: Control, retryImage?: string): Promise<CanaryApp> {
    return runControl(this.clients, this.namespace, name, control, retryImage);
  }

  /** Changes spec.image, which starts a test of the new image. */
  async setImage(name: string, image: string): Promise<CanaryApp> {
    return (await this.clients.customObjects.patchNamespacedCustomObject(
      { ...this.ref(name), body: { spec: { image } }, fieldManager: CLI_FIELD_MANAGER },
      MERGE_PATCH,
    )) as CanaryApp;
  }

  /**
   * Everything `get NAME` shows, read once. The route object is the app's mesh's: its HTTPRoute with
   * `gateway-api`, else its VirtualService. One the user may not read, or whose kind the cluster does not serve,
   * is shown as absent.
   */
  async snapshot(name: string): Promise<Snapshot> {
    const app = await this.getApp(name);
    const labelSelector = `${LABELS.app}=${name}`;
    const gatewayApi = app.spec.mesh === "gateway-api";
    const [deployments, pods, route, events] = await Promise.all([
      this.clients.apps.listNamespacedDeployment({ namespace: this.namespace, labelSelector }),
      this.clients.core.listNamespacedPod({ namespace: this.namespace, labelSelector }),
      this.clients.customObjects
        .getNamespacedCustomObject(
          gatewayApi
            ? { ...GATEWAY_API, plural: "httproutes", namespace: this.namespace, name: childNames(name).httpRoute }
            : {
                ...ISTIO_NETWORKING,
                plural: "virtualservices",
                namespace: this.namespace,
                name: childNames(name).virtualService,
              },
        )
        .then((object: unknown) => object)
        .catch(() => undefined),
      this.clients.core.listNamespacedEvent({ namespace: this.namespace, fieldSelector: eventSelector(name) }),
    ]);
    return {
      app,
      deployments: deployments.items,
      pods: pods.items,
      virtualService: gatewayApi ? undefined : (route as VirtualServiceView | undefined),
      ...(gatewayApi && route !== undefined ? { httpRoute: route } : {}),
      events: events.items,
    };
  }

  /**
   * Watch paths and selectors of everything `get NAME -w` shows; the route object is that of `mesh`, the app's
   * mesh when the watch starts (an HTTPRoute is watched only for `gateway-api`: a cluster without the Gateway
   * API's CRDs has nothing to watch).
   */
  watchSources(name: string, mesh?: Mesh): WatchSource[] {
    const ns = this.namespace;
    const labelSelector = `${LABELS.app}=${name}`;
    const route: WatchSource =
      mesh === "gateway-api"
        ? {
            key: "httpRoute",
            path: `/apis/${GATEWAY_API.group}/${GATEWAY_API.version}/namespaces/${ns}/httproutes`,
            query: { fieldSelector: `metadata.name=${childNames(name).httpRoute}` },
          }
        : {
            key: "virtualService",
            path: `/apis/${ISTIO_NETWORKING.group}/${ISTIO_NETWORKING.version}/namespaces/${ns}/virtualservices`,
            query: { fieldSelector: `metadata.name=${childNames(name).virtualService}` },
          };
    return [
      {
        key: "app",
        path: `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`,
        query: { fieldSelector: `metadata.name=${name}` },
      },
      { key: "deployments", path: `/apis/apps/v1/namespaces/${ns}/deployments`, query: { labelSelector } },
      { key: "pods", path: `/api/v1/namespaces/${ns}/pods`, query: { labelSelector } },
      route,
      { key: "events", path: `/api/v1/namespaces/${ns}/events`, query: { fieldSelector: eventSelector(name) } },
    ];
  }

  /**
   * Follows one source: a watch without a resourceVersion first replays the current objects as ADDED, then
   * streams changes; when the server ends it, it is opened again (and the replay rebuilds the set).
   */
  follow(source: WatchSource, onChange: (objects: KubernetesObject[]) => void): { stop(): void } {
    const objects = new Map<string, KubernetesObject>();
    let controller: { abort(): void } | undefined;
    let stopped = false;
    const open = async (): Promise<void> => {
      objects.clear();
      controller = await this.clients.watch.watch(
        source.path,
        source.query,
        (type: string, raw: unknown) => {
          const object = raw as KubernetesObject;
          const key = object.metadata?.uid ?? object.metadata?.name ?? "";
          if (type === "DELETED") objects.delete(key);
          else if (type === "ADDED" || type === "MODIFIED") objects.set(key, object);
          else return;
          onChange([...objects.values()]);
        },
        () => {
          if (!stopped) setTimeout(() => void open().catch(() => undefined), 500);
        },
      );
    };
    void open().catch(() => {
      if (!stopped) setTimeout(() => void open().catch(() => undefined), 500);
    });
    return {
      stop: () => {
        stopped = true;
        controller?.abort();
      },
    };
  }
}

/** One thing `get -w` and `wait` watch. */
export interface WatchSource {
  key: "app" | "deployments" | "pods" | "virtualService" | "httpRoute" | "events";
  path: string;
  query: Record<string, string>;
}

function eventSelector(name: string): string {
  return `involvedObject.kind=CanaryApp,involvedObject.name=${name}`;
}

/** Puts what the watches delivered into a snapshot. */
export function applyWatched(
  snapshot: Partial<Snapshot>,
  key: WatchSource["key"],
  objects: KubernetesObject[],
): Partial<Snapshot> {
  switch (key) {
    case "app": {
      const app = objects[0] as CanaryApp | undefined;
      const { app: _gone, ...rest } = snapshot;
      return app === undefined ? rest : { ...snapshot, app };
    }
    case "deployments":
      return { ...snapshot, deployments: objects };
    case "pods":
      return { ...snapshot, pods: objects };
    case "virtualService":
      return { ...snapshot, virtualService: objects[0] };
    case "httpRoute": {
      const route = objects[0];
      const { httpRoute: _gone, ...rest } = snapshot;
      return route === undefined ? rest : { ...snapshot, httpRoute: route };
    }
    case "events":
      return { ...snapshot, events: objects as CoreV1Event[] };
  }
}
