/**
 * The A/B phase's rules (spec.analysis.match, ADR 0027) in one canonical form, as the plan asks for them and the
 * routers read them back: header conditions only, names in lower case and sorted, each `exact` or else `regex`.
 * A cookie is matched on the `cookie` header by a regular expression (RE2, which Istio and its Gateway API
 * implementation both use), as Flagger's and Istio's documentation show it.
 */
import type { MatchRule, StringMatch } from "./types.js";

/** RE2 metacharacters escaped, so that a cookie's name and value match as written. */
function escapeRegex(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");
}

/** The `cookie` header holding `name=value` among its cookies (`a=1; name=value; b=2`). */
export function cookieRegex(name: string, value: string): string {
  return `^(.*?;\\s*)?(${escapeRegex(name)}=${escapeRegex(value)})(;.*)?$`;
}

/** A rule as header conditions (its cookie on `cookie`), names in lower case and sorted. */
export function normalRule(rule: MatchRule): MatchRule {
  const entries = Object.entries(rule.headers ?? {}).map(([name, m]): [string, StringMatch] => [
    name.toLowerCase(),
    m.exact !== undefined ? { exact: m.exact } : { regex: m.regex ?? "" },
  ]);
  if (rule.cookie !== undefined) entries.push(["cookie", { regex: cookieRegex(rule.cookie.name, rule.cookie.value) }]);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { headers: Object.fromEntries(entries) };
}
