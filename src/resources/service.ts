import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp } from "../api/types.js";
import { LABELS } from "../api/types.js";
import type { ChildMeta } from "../api/meta.js";
import { appRef, childMeta, childNames } from "../api/meta.js";

export interface ServiceObject {
  apiVersion: "v1";
  kind: "Service";
  metadata: ChildMeta;
  spec: {
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: number | string; protocol: "TCP"; appProtocol: "http" }[];
  };
}

/**
 * One Service selecting the pods of both tracks: the mesh splits traffic by DestinationRule subset,
 * so the Service itself must reach every pod of the app.
 */
export function buildService(
  app: CanaryApp,
  spec: ResolvedSpec,
  /** The pods' port: by name ("http") while the two tracks listen on different ports (a revision under test). */
  targetPort: number | string = spec.imageListenPort,
): ServiceObject {
  const { name } = appRef(app);
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: childMeta(app, childNames(name).service),
    spec: {
      selector: { [LABELS.app]: name },
      ports: [
        {
          name: "http",
          port: spec.service.port,
          targetPort,
          protocol: "TCP",
          appProtocol: "http",
        },
      ],
    },
  };
}
