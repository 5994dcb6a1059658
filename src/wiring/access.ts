/**
 * What an app may reach besides the API server, and by which rules: Prometheus (with the credential Secrets and
 * the Services its URL names), webhook destinations and the pace of posts to them, and the hosts and gateways
 * its routes may claim.
 */
import type { Logger } from "pino";
import type { Clock } from "../time/clock.js";
import type { Config } from "../config.js";
import type { Informer } from "../controller/informer.js";
import type { KubeRest } from "../kube/rest.js";
import { prometheusAccess, type PrometheusAccess } from "../analysis/providers/prometheus/access.js";
import { credentialSecretsInformer, type CredentialSecret } from "./credential-secrets.js";
import { ServiceVerdicts } from "../analysis/providers/services.js";
import { serviceLookup } from "./service-lookup.js";
import { parseRoutePolicy, type RoutePolicy } from "../router/host-policy.js";
import { webhookDestinations, type WebhookDestinations } from "../analysis/providers/webhook-destinations.js";
import { PostLimiter } from "../webhooks/rate-limit.js";
import type { LateQueue } from "./later.js";

export interface Access {
  /** Only Secrets labelled as credentials (Prometheus', notification URLs) are listed, cached and used. */
  secrets: Informer<CredentialSecret>;
  prometheus: PrometheusAccess;
  destinations: WebhookDestinations;
  /** Paces the posts of webhook checks and notifications alike. */
  posts: PostLimiter;
  routePolicy: RoutePolicy;
}

/** The rules of `config`, over a cache of the credential Secrets and the verdicts on Services. */
export function buildAccess({
  api,
  config,
  log,
  clock,
  queue,
}: {
  api: KubeRest;
  config: Config;
  log: Logger;
  clock: Clock;
  queue: Pick<LateQueue, "requeue">;
}): Access {
  const secrets = credentialSecretsInformer(api, api, config.namespaces, log.child({ informer: "secrets" }));
  // What a Service name an app chose reaches: each Service read when first needed; an app that asked is
  // judged again when its verdict is learned or changes.
  const services = new ServiceVerdicts({
    lookup: serviceLookup(api),
    now: () => clock.now(),
    changed: (keys) => {
      for (const key of keys) queue.requeue(key);
    },
    failed: (service, err) => log.warn({ service, err }, "could not read a Service an app names; asking again later"),
  });
  const prometheus = prometheusAccess({
    policyEntries: config.prometheusURLPolicy,
    defaultPrometheusURL: config.defaultPrometheusURL,
    secrets,
    services,
    allowPlainHttpCredentials: config.allowPlainHttpCredentials,
  });
  const destinations = webhookDestinations({
    entries: config.webhookURLPolicy,
    ownPrometheusURL: config.defaultPrometheusURL,
    services,
  });
  const posts = new PostLimiter({ now: () => clock.now() });
  const routePolicy = parseRoutePolicy(config.allowedHosts, config.allowedGateways);
  return { secrets, prometheus, destinations, posts, routePolicy };
}
