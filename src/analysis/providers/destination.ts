/**
 * Whether the controller may send something to a URL an app chose, under one of its URL policies (the
 * Prometheus policy, the webhook policy): the policy's judgement (url-policy.ts) and, for a URL allowed only
 * as a Service's name, the verdict on that Service (services.ts). Pure: the verdict comes from the caller.
 */
import { shortText } from "./message-text.js";
import { judgeUrl, type ServiceName, type UrlPolicy } from "./url-policy.js";

/** How a policy is named in messages. */
export interface PolicyNames {
  /** "Prometheus URL policy". */
  policy: string;
  /** The flag that sets it, "--prometheus-url-policy". */
  flag: string;
  /** What to do about a URL outside it, one sentence. */
  remedy: string;
}

/** The longest list of entries a message repeats. */
const ENTRIES_MAX = 200;

/** A policy's or an annotation's entries as a message shows them: printable, comma-separated, bounded. */
export function listed(entries: readonly string[]): string {
  return shortText(entries.join(", "), ENTRIES_MAX);
}

/**
 * Why `url` may not be sent to under `policy`, or undefined when it may. `subject` names the setting and
 * begins the sentence ("spec.prometheusURL http://…"); `serviceVerdict` says why a Service may not be used
 * (undefined: it may), and may throw when the Service is not known yet (ServiceNotKnownYet).
 */
export function destinationRefusal(
  subject: string,
  url: string | URL,
  policy: UrlPolicy,
  names: PolicyNames,
  serviceVerdict: (service: ServiceName) => string | undefined,
): string | undefined {
  const judgement = judgeUrl(policy, url);
  switch (judgement.kind) {
    case "allowed":
      return undefined;
    case "outside":
      return (
        `${subject} is outside the controller's ${names.policy} (${listed(policy.entries)}); nothing was sent ` +
        `to it. ${names.remedy}`
      );
    case "notService":
      return (
        `${subject}: only the entry ${judgement.entry} of the controller's ${names.policy} takes its host, which ` +
        `names no Service (<name>.<namespace>.svc); nothing was sent to it`
      );
    case "service": {
      const why = serviceVerdict(judgement.service);
      if (why === undefined) return undefined;
      const { namespace, name } = judgement.service;
      return (
        `${subject}: Service ${namespace}/${name} ${why}; nothing was sent to it. A host-suffix entry of the ` +
        `controller's ${names.policy} takes only ClusterIP Services with a selector; its operator may list ` +
        `the host itself in ${names.flag}`
      );
    }
  }
}

/** The Service a URL must be checked as under `policy`, if any (see `judgeUrl`). */
export function serviceToCheck(policy: UrlPolicy, url: string | URL): ServiceName | undefined {
  const judgement = judgeUrl(policy, url);
  return judgement.kind === "service" ? judgement.service : undefined;
}
