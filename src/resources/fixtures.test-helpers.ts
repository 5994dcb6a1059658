import type { CanaryApp } from "../api/types.js";

/** The seed manifest's spec (the original operator's sample, before its query was scoped), exactly as users wrote it. */
export const SEED_SPEC: CanaryApp["spec"] = {
  image: "atzedevries/go-status-code-server:v1",
  imageListenPort: 8088,
  replicas: 2,
  testReplicas: 1,
  prometheusQuery:
    'increase(istio_requests_total{destination_service_name="canaryapp-sample",response_code=~"5.*"}[20s]) > 2',
  prometheusURL: "http://prometheus.istio-system.svc:9090",
};

/** The seed manifest as the API server returns it (uid and namespace set). */
export function seedApp(overrides: Partial<CanaryApp["spec"]> = {}): CanaryApp {
  return {
    apiVersion: "canaryapp.io/v1alpha1",
    kind: "CanaryApp",
    metadata: { name: "canaryapp-sample", namespace: "demo", uid: "0b6c-uid", generation: 1 },
    spec: { ...SEED_SPEC, ...overrides },
  };
}
