/**
 * Which kinds of a custom API the API server serves: a list of a kind it does not serve (its CRD not
 * installed) is answered 404. Asked once, at start, with a list of at most one object.
 */
import type { Logger } from "pino";
import { statusCodeOf } from "../../src/kube/errors.js";

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
}

/** Lists at most one object of a kind, across all namespaces or in one. */
export type ListOne = (type: ResourceType, namespace: string | undefined) => Promise<unknown>;

/**
 * The plurals of `types` the API server serves. 404: not served. 403 across all namespaces: asked again in
 * `namespace` (a simulator limited to some namespaces may list only there). Any other failure is tried
 * again (`attempts` in all, `retryMs` apart) and then taken as not served, with a warning: the simulator
 * goes on without that kind rather than not start.
 */
export async function servedKinds(
  listOne: ListOne,
  types: readonly ResourceType[],
  namespace: string | undefined,
  log: Logger,
  { attempts = 4, retryMs = 500 }: { attempts?: number; retryMs?: number } = {},
): Promise<Set<string>> {
  const served = new Set<string>();
  for (const type of types) {
    for (let attempt = 1; ; attempt++) {
      try {
        try {
          await listOne(type, undefined);
        } catch (err) {
          if (statusCodeOf(err) !== 403 || namespace === undefined) throw err;
          await listOne(type, namespace);
        }
        served.add(type.plural);
        break;
      } catch (err) {
        if (statusCodeOf(err) === 404) break;
        if (attempt >= attempts) {
          log.warn({ err, type }, "cannot tell whether the API server serves %s; going on without it", type.plural);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, retryMs));
      }
    }
  }
  return served;
}
