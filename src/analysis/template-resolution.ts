/**
 * How an app's `spec.analysis.templates` become metrics, purely (ADR 0031): each template is looked up (a
 * CanaryAnalysisTemplate only in the app's own namespace), its args are given their values (the app's over the
 * template's defaults) and rendered into its queries as `{{args.NAME}}`; the analysis' own variables
 * (`{{namespace}}`, `{{secondaryRevision}}`…) are left for the analysis to render at each step. Anything that
 * cannot be resolved is a problem sentence, never a metric left out: a template's metric missing from an
 * analysis would let a test pass that the template was written to fail.
 */
import type {
  AnalysisTemplateKind,
  AnalysisTemplateRef,
  CanaryAnalysisTemplate,
  CanaryApp,
  MetricCheck,
  PinnedTemplate,
} from "../api/types.js";

/** Where a template is looked for: its kind, its name, and for a CanaryAnalysisTemplate the app's namespace. */
export interface TemplateAddress {
  kind: AnalysisTemplateKind;
  /** The app's namespace for a CanaryAnalysisTemplate; absent for a ClusterCanaryAnalysisTemplate. */
  namespace?: string;
  name: string;
}

/**
 * What the caches hold at an address: the template, nothing (`undefined`), or `"notServed"` when the API server
 * does not serve the kind (its CRD is not installed).
 */
export type TemplateLookup = (address: TemplateAddress) => CanaryAnalysisTemplate | undefined | "notServed";

/** Why an app's templates cannot be resolved, as the AnalysisReady condition and a Warning Event say it. */
export type TemplateProblemReason = "TemplateNotFound" | "TemplateInvalid" | "TemplatesNotServed";

export type TemplateResolution =
  | { kind: "resolved"; templates: PinnedTemplate[] }
  | { kind: "problem"; reason: TemplateProblemReason; message: string };

/** `{{args.NAME}}`, with spaces allowed inside the braces as for the analysis' variables. */
const ARG_PLACEHOLDER = /\{\{\s*args\.([^}\s]*)\s*\}\}/g;

/** The kind a reference names: a CanaryAnalysisTemplate unless it says otherwise. */
export function refKind(ref: AnalysisTemplateRef): AnalysisTemplateKind {
  return ref.kind ?? "CanaryAnalysisTemplate";
}

/** Where `ref`, used by an app of `namespace`, is looked for: a namespaced template only in the app's namespace. */
export function templateAddress(ref: AnalysisTemplateRef, namespace: string): TemplateAddress {
  const kind = refKind(ref);
  return kind === "CanaryAnalysisTemplate" ? { kind, namespace, name: ref.name } : { kind, name: ref.name };
}

/** What a metric from a template says it came from: `<Kind>/<name>`. */
export function templateLabel(kind: AnalysisTemplateKind, name: string): string {
  return `${kind}/${name}`;
}

/**
 * The metrics of the app's templates, each rendered with its args and marked with its template; or the problems
 * that keep them from being resolved, every one of them in one message. Undefined when the app uses none.
 */
export function resolveTemplates(app: CanaryApp, lookup: TemplateLookup): TemplateResolution | undefined {
  const refs = app.spec.analysis?.templates ?? [];
  if (refs.length === 0) return undefined;
  const namespace = app.metadata.namespace ?? "default";
  const templates: PinnedTemplate[] = [];
  const notFound: string[] = [];
  const invalid: string[] = [];
  const notServed = new Set<AnalysisTemplateKind>();
  for (const ref of refs) {
    const address = templateAddress(ref, namespace);
    const label = templateLabel(address.kind, ref.name);
    const found = lookup(address);
    if (found === "notServed") {
      notServed.add(address.kind);
      continue;
    }
    if (found === undefined) {
      notFound.push(
        address.kind === "CanaryAnalysisTemplate"
          ? `${label} does not exist in namespace ${namespace} (a CanaryAnalysisTemplate is used only from the app's own namespace)`
          : `${label} does not exist`,
      );
      continue;
    }
    const rendered = renderTemplate(ref, found, label);
    if (rendered.problems.length > 0) invalid.push(...rendered.problems);
    else {
      templates.push({
        kind: address.kind,
        name: ref.name,
        ...(found.metadata.resourceVersion !== undefined ? { resourceVersion: found.metadata.resourceVersion } : {}),
        metrics: rendered.metrics,
      });
    }
  }
  invalid.push(...nameClashes(app.spec.analysis?.metrics ?? [], templates));
  if (notServed.size > 0) {
    const kinds = [...notServed].join(" and ");
    return {
      kind: "problem",
      reason: "TemplatesNotServed",
      message: `the API server does not serve ${kinds}: install its CRD (crds/analysis-templates.yaml) to use analysis templates`,
    };
  }
  if (notFound.length > 0) {
    return { kind: "problem", reason: "TemplateNotFound", message: [...notFound, ...invalid].join("; ") };
  }
  if (invalid.length > 0) return { kind: "problem", reason: "TemplateInvalid", message: invalid.join("; ") };
  return { kind: "resolved", templates };
}

/** One template's metrics with its args rendered, or why they cannot be. */
export function renderTemplate(
  ref: AnalysisTemplateRef,
  template: Pick<CanaryAnalysisTemplate, "spec">,
  label: string,
): { metrics: MetricCheck[]; problems: string[] } {
  const problems: string[] = [];
  const declared = template.spec.args ?? [];
  const given = ref.args ?? [];
  const values = new Map<string, string>();
  for (const arg of declared) if (arg.value !== undefined) values.set(arg.name, arg.value);
  for (const arg of given) {
    if (!declared.some((d) => d.name === arg.name)) {
      problems.push(`${label} has no arg ${arg.name} (it declares ${argList(declared)})`);
    } else values.set(arg.name, arg.value);
  }
  for (const arg of declared) {
    if (!values.has(arg.name)) problems.push(`${label} needs a value for its arg ${arg.name}`);
  }
  const metrics: MetricCheck[] = [];
  for (const metric of template.spec.metrics) {
    const query = metric.query;
    for (const name of argsUsed(query ?? "")) {
      if (!declared.some((d) => d.name === name)) {
        problems.push(`the query of ${metric.name} in ${label} uses {{args.${name}}}, which is not one of its args`);
      }
    }
    const address = metric.provider?.address;
    if (address !== undefined && argsUsed(address).length > 0) {
      // The destination of a query is what the URL policy vets: it stays as the template's author wrote it.
      problems.push(
        `the provider address of ${metric.name} in ${label} uses an arg: args are rendered in queries only`,
      );
    }
    const copy = structuredClone(metric);
    if (query !== undefined)
      copy.query = query.replace(ARG_PLACEHOLDER, (whole, name: string) => values.get(name) ?? whole);
    metrics.push({ ...copy, template: label });
  }
  return { metrics, problems };
}

/** The arg names a text uses as `{{args.NAME}}`, once each. */
export function argsUsed(text: string): string[] {
  const names: string[] = [];
  for (const match of text.matchAll(ARG_PLACEHOLDER)) {
    const name = match[1] ?? "";
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

function argList(args: readonly { name: string }[]): string {
  return args.length === 0 ? "no args" : args.map((a) => a.name).join(", ");
}

/** A metric name used twice across the app's own metrics and its templates': which, and where. */
function nameClashes(own: readonly MetricCheck[], templates: readonly PinnedTemplate[]): string[] {
  const seen = new Map<string, string>(own.map((m) => [m.name, "the app's own metrics"]));
  const problems: string[] = [];
  for (const template of templates) {
    for (const metric of template.metrics) {
      const label = metric.template ?? template.name;
      const earlier = seen.get(metric.name);
      if (earlier !== undefined) problems.push(`metric ${metric.name} of ${label} is also in ${earlier}`);
      else seen.set(metric.name, label);
    }
  }
  return problems;
}

/** The metrics a test is judged by: the app's own, then its templates', in the order the spec names them. */
export function withTemplateMetrics(own: readonly MetricCheck[], templates: readonly PinnedTemplate[]): MetricCheck[] {
  return [...own, ...templates.flatMap((t) => t.metrics)];
}
