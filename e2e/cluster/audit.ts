import { writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * The audit policy of a control plane started with `audit: true`: one event per write (create, update, patch,
 * delete) of the objects the controller writes, at level Metadata (who, what, when; no bodies), logged when
 * the response is complete (the `RequestReceived` stage is left out, so each request is one line). Reads,
 * watches, Leases and everything else are not logged.
 */
export const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
    resources:
      - group: "canaryapp.io"
        resources: ["canaryapps", "canaryapps/status"]
      - group: "apps"
        resources: ["deployments", "statefulsets"]
      - group: ""
        resources: ["services", "events", "pods"]
      - group: "events.k8s.io"
        resources: ["events"]
      - group: "networking.istio.io"
        resources: ["virtualservices", "destinationrules"]
  - level: None
`;

/** Where a control plane's audit log and policy live. */
export interface AuditFiles {
  policy: string;
  log: string;
}

/** Writes the policy into `dir`; the log is written next to it by kube-apiserver. */
export async function writeAuditPolicy(dir: string): Promise<AuditFiles> {
  const files = { policy: join(dir, "audit-policy.yaml"), log: join(dir, "audit.log") };
  await writeFile(files.policy, AUDIT_POLICY);
  return files;
}

/** kube-apiserver's flags for `files`: JSON lines, in one file (rotated only past 10 GB). */
export function auditArgs(files: AuditFiles): string[] {
  return [
    `--audit-policy-file=${files.policy}`,
    `--audit-log-path=${files.log}`,
    "--audit-log-format=json",
    // The default rotates at 100 MB (lumberjack's default for 0): a reader of one file would miss the rest.
    "--audit-log-maxsize=10240",
    // Written as each request completes, none dropped under load (the batching mode may drop or delay events).
    "--audit-log-mode=blocking",
  ];
}
