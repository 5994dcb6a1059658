import { createHash } from "node:crypto";
import type { AdminClient } from "./admin-client.js";
import { waitFor, type WaitOptions } from "./wait.js";

/** Label carried by every simulated node; tests can select them with `type=kwok`. */
export const FAKE_NODE_LABEL = { key: "type", value: "kwok" } as const;

interface NodeStatusView {
  status?: { conditions?: { type?: string; status?: string }[] };
  spec?: { taints?: { key?: string; effect?: string }[] };
}

/** A Node that kwok plays the kubelet for: large enough that scheduling is never what a test measures. */
export function fakeNode(name: string): object {
  const resources = { cpu: "64", memory: "256Gi", pods: "250", "ephemeral-storage": "1Ti" };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { "node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake" },
      labels: {
        [FAKE_NODE_LABEL.key]: FAKE_NODE_LABEL.value,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "kubernetes.io/role": "agent",
        "node-role.kubernetes.io/agent": "",
      },
    },
    spec: {},
    status: { allocatable: resources, capacity: resources },
  };
}

/**
 * Creates `count` fake nodes and waits until each is Ready and carries no NoSchedule/NoExecute taint
 * (the node lifecycle controller removes `not-ready` once kwok reports Ready), so pods can land at once.
 */
export async function createFakeNodes(client: AdminClient, count: number, wait: WaitOptions): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `kwok-node-${i}`);
  await Promise.all(
    names.map(async (name) => {
      try {
        await client.expect("POST", "/api/v1/nodes", fakeNode(name));
      } catch (cause) {
        throw new Error(`Node ${name}: create failed`, { cause });
      }
    }),
  );
  await Promise.all(
    names.map((name) =>
      waitFor(
        `Node ${name}: Ready and untainted`,
        async () => {
          const node = (await client.expect("GET", `/api/v1/nodes/${name}`)).body as NodeStatusView;
          const ready = node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
          const tainted = node.spec?.taints?.some((t) => t.effect === "NoSchedule" || t.effect === "NoExecute");
          return ready && !tainted ? true : undefined;
        },
        wait,
      ),
    ),
  );
  return names;
}

/**
 * A pod annotated `e2e.canaryapp.io/never-ready: "true"` becomes Running with its containers started but
 * never Ready, as a pod whose readiness probe never passes (POD_STAGES, `pod-never-ready`). Set through a
 * CanaryApp's `spec.pod.annotations`, it makes a revision that never becomes Ready.
 */
export const NEVER_READY_ANNOTATION = "e2e.canaryapp.io/never-ready";

/** kwok's selector key (a jq query on the object) for the never-ready annotation. */
const NEVER_READY_KEY = `'.metadata.annotations["${NEVER_READY_ANNOTATION}"]'`;

/** The end of a running pod's status in both running stages: init containers done, addresses, phase, start. */
const RUNNING_POD_STATUS = `      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}`;

/**
 * kwok's pod stages (its v0.7 defaults: ready, complete for Jobs, delete), with two additions: every
 * container reports an `imageID` as a kubelet does, so the controller can read the digest a pod ran; and
 * `pod-never-ready` takes the pods annotated NEVER_READY_ANNOTATION `"true"`, which `pod-ready` leaves to it.
 * The digest is derived from the image string (sprig's sha256sum), so it is deterministic: a tag always
 * "resolves" to the same build, and an image pinned to a digest reports that digest.
 * kwok uses its built-in pod stages only when no Pod stage is configured, so all of them are given here.
 * A selector key is a jq query on the object: an annotation whose name has dots and a slash is
 * `.metadata.annotations["<name>"]`, null on a pod without it (which `NotIn` matches and `In` does not).
 */
export const POD_STAGES = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
      - key: ".metadata.deletionTimestamp"
        operator: "DoesNotExist"
      - key: ".status.podIP"
        operator: "DoesNotExist"
      - key: ${NEVER_READY_KEY}
        operator: "NotIn"
        values: ["true"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      {{ range .spec.readinessGates }}
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: {{ .conditionType | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: {{ if contains "@sha256:" .image }}{{ printf "docker-pullable://%s" .image | Quote }}{{ else }}{{ printf "docker-pullable://%s@sha256:%s" .image (sha256sum .image) | Quote }}{{ end }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
${RUNNING_POD_STATUS}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-never-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
      - key: ".metadata.deletionTimestamp"
        operator: "DoesNotExist"
      - key: ".status.podIP"
        operator: "DoesNotExist"
      - key: ${NEVER_READY_KEY}
        operator: "In"
        values: ["true"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: {{ if contains "@sha256:" .image }}{{ printf "docker-pullable://%s" .image | Quote }}{{ else }}{{ printf "docker-pullable://%s@sha256:%s" .image (sha256sum .image) | Quote }}{{ end }}
        name: {{ .name | Quote }}
        ready: false
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
${RUNNING_POD_STATUS}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
      - key: ".metadata.deletionTimestamp"
        operator: "DoesNotExist"
      - key: ".status.phase"
        operator: "In"
        values: ["Running"]
      - key: ".metadata.ownerReferences.[].kind"
        operator: "In"
        values: ["Job"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
      - key: ".metadata.deletionTimestamp"
        operator: "Exists"
  next:
    finalizers:
      empty: true
    delete: true
`;

/** The digest kwok's pods report for `image` (see POD_STAGES): what a test expects the primary pinned to. */
export function fakeDigest(image: string): string {
  const pinned = /@(sha256:[a-f0-9]{64})$/.exec(image);
  return pinned?.[1] ?? `sha256:${createHash("sha256").update(image).digest("hex")}`;
}
