/**
 * Whether the API server serves a resource, asked of its discovery document (`GET /apis/<group>/<version>`,
 * as `kubectl api-resources` asks): for kinds of an optional API, whose CRDs a cluster may not have.
 */
import pRetry, { AbortError } from "p-retry";
import type { Logger } from "pino";
import { isNotFound, isTerminal } from "./errors.js";
import type { KubeRest } from "./rest.js";

interface ApiResourceList {
  resources?: { name?: string }[];
}

/**
 * True when `group`/`version` lists `plural`; false when the group version is not served (404) or does not list
 * it. A transient failure is retried (p-retry: 5 tries over ~30 s); one that persists reads as not served,
 * logged, so that the controller starts without that kind rather than not at all.
 */
export async function servesResource(
  api: Pick<KubeRest, "request">,
  resource: { group: string; version: string; plural: string },
  log: Logger,
): Promise<boolean> {
  const path = resource.group === "" ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  try {
    return await pRetry(
      async () => {
        try {
          const list = await api.request<ApiResourceList>("GET", path);
          return (list.resources ?? []).some((r) => r.name === resource.plural);
        } catch (error) {
          if (isNotFound(error)) return false;
          if (isTerminal(error)) throw new AbortError(error instanceof Error ? error : String(error));
          throw error;
        }
      },
      { retries: 5, minTimeout: 1000, factor: 2 },
    );
  } catch (error) {
    log.warn(
      { err: error, path },
      "could not tell whether the API server serves %s; going on without it",
      resource.plural,
    );
    return false;
  }
}
