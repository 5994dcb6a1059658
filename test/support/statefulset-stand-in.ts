import { AppsV1Api, type KubeConfig, type V1StatefulSet } from "@kubernetes/client-node";
import { repeat, type Repeating } from "./repeat.js";
import { REVISION_LABEL } from "../../src/api/types.js";

/** One state of a StatefulSet as the stand-in saw it: its partition and the revision each ordinal runs. */
export interface OrdinalState {
  at: number;
  partition: number;
  /** Index = ordinal; the ControllerRevision name the ordinal's pod runs. */
  ordinals: string[];
}

/** A running stand-in for the StatefulSet controller. */
export interface StatefulSetStandIn extends Repeating {
  /** Each distinct state of each StatefulSet, by name, in order. */
  readonly history: Map<string, OrdinalState[]>;
}

/** The ControllerRevision name of a template: `<name>-<its canaryapp.io/revision label>`. */
function revisionName(sts: V1StatefulSet): string {
  return `${sts.metadata?.name ?? ""}-${sts.spec?.template.metadata?.labels?.[REVISION_LABEL] ?? "none"}`;
}

/**
 * Plays kube-controller-manager's StatefulSet controller, which the api profile does not run, as a rolling
 * update with a partition does, at once: the ordinals at or above the partition take the template's
 * revision, those below keep theirs; every pod is ready. It writes the status the StatefulSet controller
 * writes (observedGeneration, currentRevision / updateRevision, currentReplicas / updatedReplicas,
 * readyReplicas) through the status subresource, and remembers which revision each ordinal ran.
 */
export function statefulSetStandIn(kc: KubeConfig, namespace: string, intervalMs = 100): StatefulSetStandIn {
  const apps = kc.makeApiClient(AppsV1Api);
  const history = new Map<string, OrdinalState[]>();
  const ordinals = new Map<string, string[]>();

  const pass = async (noteError: (error: unknown) => void): Promise<void> => {
    const list = await apps.listNamespacedStatefulSet({ namespace });
    for (const sts of list.items) {
      const name = sts.metadata?.name ?? "";
      const replicas = sts.spec?.replicas ?? 1;
      const partition = sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
      const update = revisionName(sts);
      const before = ordinals.get(name) ?? [];
      const now = Array.from({ length: replicas }, (_, n) => (n >= partition ? update : (before[n] ?? update)));
      ordinals.set(name, now);
      const states = history.get(name) ?? [];
      const last = states.at(-1);
      if (last === undefined || last.partition !== partition || last.ordinals.join() !== now.join()) {
        states.push({ at: Date.now(), partition, ordinals: [...now] });
        history.set(name, states);
      }
      const previousCurrent = sts.status?.currentRevision;
      const current = now.every((r) => r === update) ? update : (previousCurrent ?? now[0] ?? update);
      const status = {
        observedGeneration: sts.metadata?.generation ?? 1,
        replicas,
        readyReplicas: replicas,
        availableReplicas: replicas,
        currentReplicas: now.filter((r) => r === current).length,
        updatedReplicas: now.filter((r) => r === update).length,
        currentRevision: current,
        updateRevision: update,
      };
      const same = Object.entries(status).every(
        ([k, v]) => (sts.status as Record<string, unknown> | undefined)?.[k] === v,
      );
      if (same) continue;
      try {
        await apps.replaceNamespacedStatefulSetStatus({ namespace, name, body: { ...sts, status } });
      } catch (e) {
        // Changed meanwhile: the next pass sees the new state.
        noteError(e);
      }
    }
  };
  return { history, ...repeat(pass, intervalMs) };
}
