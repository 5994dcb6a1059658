/**
 * The controller's `ServiceLookup` (analysis/providers/services.ts): one Service read through its API client,
 * whose answer the verdicts on Services as destinations are made of.
 */
import { statusCodeOf } from "../kube/errors.js";
import type { KubeRest } from "../kube/rest.js";
import type { ServiceFacts, ServiceLookup } from "../analysis/providers/services.js";

/** The ServiceLookup of a controller: a GET of the Service through its API client. */
export function serviceLookup(api: Pick<KubeRest, "get">): ServiceLookup {
  return async ({ namespace, name }) => {
    try {
      const service = await api.get<{ spec?: ServiceFacts }>({
        group: "",
        version: "v1",
        plural: "services",
        namespace,
        name,
      });
      const spec = service.spec ?? {};
      return { found: { type: spec.type, selector: spec.selector, externalName: spec.externalName } };
    } catch (error) {
      const code = statusCodeOf(error);
      if (code === 404) return { missing: true };
      if (code === 403) return { forbidden: true };
      throw error;
    }
  };
}
