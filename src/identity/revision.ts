import type { ReadonlyDeep } from "type-fest";
import { hash as digest } from "node:crypto";
import type { ResolvedSpec } from "../api/defaults.js";
import { stableJson } from "../api/json.js";
import type { PodTemplateParts, Track } from "../api/types.js";
import { normaliseImage } from "./image-ref.js";

/**
 * A test's subject is the whole pod template: the image, `imageListenPort` and `pod` (see PodTemplateParts).
 * Revisions are short hashes of their canonical JSON (keys sorted), stable across processes and versions.
 */

/** The template parts of a spec. */
export function templateOf(spec: Pick<ResolvedSpec, "imageListenPort" | "pod">): PodTemplateParts {
  return { imageListenPort: spec.imageListenPort, pod: spec.pod };
}

function hash(value: unknown): string {
  return digest("sha256", stableJson(value), "hex").slice(0, 10);
}

/** The revision of the template besides the image. */
export function settingsRevisionOf(template: ReadonlyDeep<PodTemplateParts>): string {
  return hash(template);
}

/** The revision of the whole pod template: the image (normalised, so `app:v3` = `docker.io/library/app:v3`) and the rest. */
export function revisionOf(image: string, template: ReadonlyDeep<PodTemplateParts>): string {
  return hash({ image: normaliseImage(image), template });
}

/** Whether two templates are the same besides the image. */
export function sameSettings(a: ReadonlyDeep<PodTemplateParts>, b: ReadonlyDeep<PodTemplateParts>): boolean {
  return settingsRevisionOf(a) === settingsRevisionOf(b);
}

const POD_FIELDS_NAMED: Record<string, string> = {
  readinessProbe: "readiness probe",
  livenessProbe: "liveness probe",
  imagePullSecrets: "image pull secrets",
  serviceAccountName: "service account",
};

/**
 * What changed from one template to the next besides the image, in a few words: "imageListenPort
 * 8080 → 9090; env FOO changed; resources changed". Empty when nothing did.
 */
export function describeChanges(from: ReadonlyDeep<PodTemplateParts>, to: ReadonlyDeep<PodTemplateParts>): string {
  const parts: string[] = [];
  if (from.imageListenPort !== to.imageListenPort) {
    parts.push(`imageListenPort ${from.imageListenPort} → ${to.imageListenPort}`);
  }
  const keys = [...new Set([...Object.keys(from.pod), ...Object.keys(to.pod)])].sort();
  for (const key of keys) {
    const before = (from.pod as Record<string, unknown>)[key];
    const after = (to.pod as Record<string, unknown>)[key];
    if (stableJson(before) === stableJson(after)) continue;
    if (key === "env") parts.push(...envChanges(from.pod.env ?? [], to.pod.env ?? []));
    else parts.push(`${POD_FIELDS_NAMED[key] ?? key} changed`);
  }
  return parts.join("; ");
}

function envChanges(from: readonly { name: string }[], to: readonly { name: string }[]): string[] {
  const before = new Map(from.map((e) => [e.name, stableJson(e)]));
  const after = new Map(to.map((e) => [e.name, stableJson(e)]));
  const out: string[] = [];
  for (const [name, value] of after) {
    if (!before.has(name)) out.push(`env ${name} added`);
    else if (before.get(name) !== value) out.push(`env ${name} changed`);
  }
  for (const name of before.keys()) if (!after.has(name)) out.push(`env ${name} removed`);
  // Same variables, same values, another order.
  return out.length > 0 ? out : ["env order changed"];
}

/** What a track's workload is given, as far as its revision goes: the image, and the template when it is not spec's. */
export interface RevisionWant {
  image: string;
  template?: ReadonlyDeep<PodTemplateParts>;
}

/** The revision of the pod template a track's workload is given (ADR 0011). */
export function wantRevision(spec: Pick<ResolvedSpec, "imageListenPort" | "pod">, want: RevisionWant): string {
  return revisionOf(want.image, {
    imageListenPort: want.template?.imageListenPort ?? spec.imageListenPort,
    pod: want.template?.pod ?? spec.pod,
  });
}

/**
 * Istio's canonical revision of each track's pods (`destination_canonical_revision`, ADR 0023): the track
 * for Deployments, whose pods say `primary` or `secondary`; for a StatefulSet, whose two tracks are one
 * workload, the revision of the pod template each track runs (the secondary's is the primary's while no
 * test runs). The built-in queries select a track's requests by it.
 */
export function canonicalRevisions(
  spec: ResolvedSpec,
  wants: { primary: RevisionWant; secondary: RevisionWant | null },
): Record<Track, string> {
  if (spec.workload.kind !== "StatefulSet") return { primary: "primary", secondary: "secondary" };
  const primary = wantRevision(spec, wants.primary);
  return { primary, secondary: wants.secondary === null ? primary : wantRevision(spec, wants.secondary) };
}
