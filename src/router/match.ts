/**
 * The A/B phase's rules (spec.analysis.match, ADR 0027) as the routers write and read them. Pure. A rule is
 * one match entry whose header conditions all hold (Istio: one `match` item; the Gateway API: one `matches`
 * item); the rules are alternatives (ORed by both). The plan's rules are in canonical form (api/match-rule.ts).
 */
import { normalRule } from "../api/match-rule.js";
import type { MatchRule, StringMatch } from "../api/types.js";

/** The name of the route (VirtualService) or rule (HTTPRoute) that sends the matching requests to the secondary. */
export const AB_ROUTE = "ab-match";

/** A rule's header conditions, by name. */
export function headerConditions(rule: MatchRule): [string, StringMatch][] {
  return Object.entries(normalRule(rule).headers ?? {});
}

/** A rule read back from a route's header conditions, in canonical form. */
export function ruleOfHeaders(conditions: [string, StringMatch][]): MatchRule {
  return normalRule({ headers: Object.fromEntries(conditions) });
}
