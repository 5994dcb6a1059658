/**
 * A Kubernetes label selector (metav1.LabelSelector) applied to a set of labels, as
 * k8s.io/apimachinery/pkg/apis/meta/v1 LabelSelectorAsSelector builds it: every `matchLabels` pair and every
 * `matchExpressions` requirement must hold (In, NotIn, Exists, DoesNotExist); an empty selector selects
 * everything. Pure.
 */
import type { LabelSelectorLike } from "./gateway-api-objects.js";

/** Whether `labels` satisfy `selector`; an operator the API does not define selects nothing. */
export function selectorMatches(selector: LabelSelectorLike, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const req of selector.matchExpressions ?? []) {
    const key = req.key ?? "";
    const has = Object.hasOwn(labels, key);
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
        if (!has || !values.includes(labels[key] ?? "")) return false;
        break;
      case "NotIn":
        if (has && values.includes(labels[key] ?? "")) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      case undefined:
      default:
        return false;
    }
  }
  return true;
}
