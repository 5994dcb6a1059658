import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp, Track } from "../api/types.js";
import { LABELS } from "../api/types.js";
import type { ChildMeta } from "../api/meta.js";
import { appRef, childMeta, childNames, trackServiceName } from "../api/meta.js";

export interface ServiceObject {
  apiVersion: "v1";
  kind: "Service";
  metadata: ChildMeta;
  spec: {
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: number | string; protocol: "TCP"; appProtocol: "http" }[];
  };
}

function service(
  app: CanaryApp,
  spec: ResolvedSpec,
  meta: ChildMeta,
  track: Track,
  /** The pods' port: by name ("http") while the two tracks listen on different ports (a revision under test). */
  targetPort: number | string,
  /** The track's pods, when the workload tells them apart by other labels than the track (a StatefulSet). */
  selector?: Record<string, string>,
): ServiceObject {
  const { name } = appRef(app);
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta,
    spec: {
      selector: selector ?? { [LABELS.app]: name, [LABELS.track]: track },
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

/**
 * The app's Service, `<name>`: it selects the primary's pods only. Callers in the mesh are split by the
 * VirtualService (whose destinations are the per-track Services); callers without a sidecar get the
 * Service's own endpoints, so they never reach an image under test (ADR 0010).
 */
export function buildService(
  app: CanaryApp,
  spec: ResolvedSpec,
  targetPort: number | string = spec.imageListenPort,
  selector?: Record<string, string>,
): ServiceObject {
  const { name } = appRef(app);
  return service(app, spec, childMeta(app, childNames(name).service), "primary", targetPort, selector);
}

/** The Service of one track, `<name>-primary` or `<name>-secondary`: a destination of the canary route. */
export function buildTrackService(
  app: CanaryApp,
  spec: ResolvedSpec,
  track: Track,
  targetPort: number | string = spec.imageListenPort,
  selector?: Record<string, string>,
): ServiceObject {
  const { name } = appRef(app);
  return service(app, spec, childMeta(app, trackServiceName(name, track), track), track, targetPort, selector);
}
