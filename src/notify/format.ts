/**
 * How a notice is written for each kind of receiver (pure): the generic JSON as is, Slack's and Teams'
 * incoming-webhook messages. Every form carries the reason, metric, value and query when the notice has them.
 */
import type { Notice, NotificationType } from "../api/types.js";

/** What a generic receiver gets: the notice, and the app it is about. */
export interface GenericPayload extends Notice {
  app: string;
  namespace: string;
}

export function genericPayload(app: { name: string; namespace: string }, notice: Notice): GenericPayload {
  return { app: app.name, namespace: app.namespace, ...notice };
}

function headline(p: GenericPayload): string {
  const where = `${p.namespace}/${p.app}`;
  switch (p.event) {
    case "TestStarted":
      return `${where}: testing ${p.image ?? "a new image"}`;
    case "Promoted":
      return `${where}: promoted ${p.image ?? ""}`;
    case "RolledBack":
      return `${where}: rolled back ${p.image ?? ""} (${p.reason ?? "failed"})`;
    case "FailedImageSkipped":
      return `${where}: not testing ${p.image ?? ""}, it failed before (${p.reason ?? "failed"})`;
    case "Failure":
      return `${where}: ${p.reason ?? "failure"}`;
  }
}

/** The facts beside the headline, as name/value pairs, in a fixed order. */
function facts(p: GenericPayload): { name: string; value: string }[] {
  const list: [string, string | number | undefined][] = [
    ["Reason", p.reason],
    ["Metric", p.metric],
    ["Value", p.value],
    ["Query", p.query],
    ["Image", p.image],
    ["Primary", p.primaryImage],
  ];
  return list.filter(([, v]) => v !== undefined).map(([name, v]) => ({ name, value: String(v) }));
}

function good(p: GenericPayload): boolean {
  return p.event === "Promoted" || p.event === "TestStarted";
}

/** The body POSTed to a receiver of `type`. */
export function formatNotice(type: NotificationType, payload: GenericPayload): unknown {
  switch (type) {
    case "generic":
      return payload;
    case "slack":
      return {
        text: `${headline(payload)}: ${payload.message}`,
        attachments: [
          {
            color: good(payload) ? "good" : "danger",
            fields: facts(payload).map((f) => ({ title: f.name, value: f.value, short: f.name !== "Query" })),
            footer: `canaryapp · ${payload.idempotencyKey}`,
          },
        ],
      };
    case "teams":
      return {
        "@type": "MessageCard",
        "@context": "https://schema.org/extensions",
        summary: headline(payload),
        themeColor: good(payload) ? "2EB886" : "D13438",
        title: headline(payload),
        text: payload.message,
        sections: [{ facts: [...facts(payload), { name: "Key", value: payload.idempotencyKey }] }],
      };
  }
}
