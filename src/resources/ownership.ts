import type { CanaryApp } from "../api/types.js";
import { ADOPT_ANNOTATION } from "../api/types.js";

/** What is read of an object that already exists under a child's name. */
export interface ExistingObject {
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    annotations?: Record<string, string>;
    ownerReferences?: { uid?: string; controller?: boolean; kind?: string; name?: string }[];
  };
}

/**
 * Why an object that already exists under a child's name may not be taken over by `app`, or undefined when
 * it may: it does not exist, this CanaryApp controls it already, or its owner handed it over with the
 * annotation `canaryapp.io/adopt=<CanaryApp name>`. A user's Service, VirtualService, DestinationRule or
 * Deployment that merely shares the name is never changed (server-side apply would replace its selector or
 * routes, and the owner reference would have it garbage-collected with the CanaryApp).
 */
export function takeOverRefusal(existing: ExistingObject | undefined, app: CanaryApp): string | undefined {
  if (existing === undefined) return undefined;
  const meta = existing.metadata ?? {};
  const controller = meta.ownerReferences?.find((ref) => ref.controller === true);
  if (controller?.uid !== undefined && controller.uid === app.metadata.uid) return undefined;
  const appName = app.metadata.name ?? "";
  if (meta.annotations?.[ADOPT_ANNOTATION] === appName) return undefined;
  const kind = existing.kind ?? "object";
  const where = `${meta.namespace ?? app.metadata.namespace ?? ""}/${meta.name ?? ""}`;
  const owner =
    controller !== undefined
      ? `it is controlled by ${controller.kind ?? "another object"} ${controller.name ?? ""}`
      : "it is not ours";
  return (
    `${kind} ${where} already exists and ${owner}, so it is left unchanged; to hand it over to this CanaryApp: ` +
    `kubectl -n ${meta.namespace ?? app.metadata.namespace ?? ""} annotate ${kind.toLowerCase()} ${meta.name ?? ""} ${ADOPT_ANNOTATION}=${appName}`
  );
}
