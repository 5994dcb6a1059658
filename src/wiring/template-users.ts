/**
 * Which apps use which analysis template (ADR 0031): an index kept from the CanaryApps' cache events, so that
 * a template's change queues exactly the apps that name it, without a scan of every app.
 */
import type { AnalysisTemplateRef, CanaryApp } from "../api/types.js";
import { objectKey } from "../object-keys.js";
import { refKind, templateAddress } from "../analysis/template-resolution.js";

interface TemplateLike {
  kind?: string;
  metadata?: { namespace?: string; name?: string };
}

/** The key a template is indexed by: `<Kind>/<namespace>/<name>`, the namespace empty for a cluster template. */
function templateKey(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ""}/${name}`;
}

function refKeys(app: CanaryApp): string[] {
  const namespace = app.metadata.namespace ?? "default";
  return (app.spec.analysis?.templates ?? []).map((ref: AnalysisTemplateRef) => {
    const address = templateAddress(ref, namespace);
    return templateKey(refKind(ref), address.namespace, ref.name);
  });
}

export class TemplateUsers {
  /** Template key → the keys of the apps that name it. */
  readonly #users = new Map<string, Set<string>>();
  /** App key → the template keys it names: what to take out when it changes or goes. */
  readonly #uses = new Map<string, string[]>();

  /** The app was added or changed: index what it names now. */
  set(app: CanaryApp): void {
    const key = objectKey(app);
    if (key === undefined) return;
    this.remove(app);
    const uses = refKeys(app);
    if (uses.length === 0) return;
    this.#uses.set(key, uses);
    for (const use of uses) {
      const users = this.#users.get(use) ?? new Set<string>();
      users.add(key);
      this.#users.set(use, users);
    }
  }

  /** The app was removed. */
  remove(app: CanaryApp): void {
    const key = objectKey(app);
    if (key === undefined) return;
    for (const use of this.#uses.get(key) ?? []) {
      const users = this.#users.get(use);
      users?.delete(key);
      if (users?.size === 0) this.#users.delete(use);
    }
    this.#uses.delete(key);
  }

  /** The keys of the apps that name `template` of `kind` (the kind its cache holds). */
  of(kind: "CanaryAnalysisTemplate" | "ClusterCanaryAnalysisTemplate", template: TemplateLike): string[] {
    const name = template.metadata?.name ?? "";
    const namespace = kind === "CanaryAnalysisTemplate" ? template.metadata?.namespace : undefined;
    return [...(this.#users.get(templateKey(kind, namespace, name)) ?? [])];
  }
}
