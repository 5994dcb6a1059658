/**
 * Holds writes open in one namespace: a ValidatingAdmissionPolicy (with its binding) makes the API server
 * refuse the requests a rule matches, with a message of the test's, until the hold is released. A test uses it
 * to keep a controller between two of its writes (the first goes through, the next is refused) and kill it
 * there.
 */
import { AdmissionregistrationV1Api, type KubeConfig, type V1NamedRuleWithOperations } from "@kubernetes/client-node";
import { eventually, rejectionMessage } from "./kube.js";

export interface HoldOptions {
  /** Names the policy and its binding (cluster-scoped: make it unique, e.g. with the namespace). */
  name: string;
  namespace: string;
  /** What is refused. */
  rule: V1NamedRuleWithOperations;
  /** CEL on the request; false refuses. Default: refuse every request the rule matches. */
  expression?: string;
  /** The refusal's message, by which `probe`'s refusal is recognised. */
  message: string;
  /** One request the hold must refuse, made as a dry run (admission sees dry runs). */
  probe: () => Promise<unknown>;
}

export interface Hold {
  /** Removes the policy and waits until the probe goes through again; a second call does nothing. */
  release(): Promise<void>;
}

/** Refuses the rule's requests in the namespace, once the probe shows the API server doing so. */
export async function holdWrites(kc: KubeConfig, options: HoldOptions): Promise<Hold> {
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const refused = async (): Promise<boolean> => {
    try {
      await options.probe();
      return false;
    } catch (error) {
      if (rejectionMessage(error).includes(options.message)) return true;
      throw error;
    }
  };
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name: options.name },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [options.rule] },
        validations: [{ expression: options.expression ?? "false", message: options.message }],
      },
    },
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name: options.name },
      spec: {
        policyName: options.name,
        validationActions: ["Deny"],
        matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": options.namespace } } },
      },
    },
  });
  const wait = { timeoutMs: 15_000, intervalMs: 100 };
  await eventually(`${options.name} in force`, async () => ((await refused()) ? true : undefined), wait);
  let held = true;
  return {
    async release() {
      if (!held) return;
      held = false;
      await admission.deleteValidatingAdmissionPolicyBinding({ name: options.name });
      await admission.deleteValidatingAdmissionPolicy({ name: options.name });
      await eventually(`${options.name} released`, async () => ((await refused()) ? undefined : true), wait);
    },
  };
}
