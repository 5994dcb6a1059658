/**
 * The metric sources beyond Prometheus, by `provider.type`, for by-provider.ts; and their access rules made
 * from the controller's Prometheus rules (prometheus/access.ts), so that every source is bound by the same
 * URL policy and credentials rules.
 */
import type { CanaryApp, MetricProviderType } from "../../api/types.js";
import type { AnalysisProvider } from "./analysis-provider.js";
import { cloudWatchAnalysis } from "./cloudwatch.js";
import { datadogAnalysis } from "./datadog.js";
import { graphiteAnalysis } from "./graphite.js";
import { influxDbAnalysis } from "./influxdb.js";
import type { SourceAccess } from "./metric-source.js";
import { newRelicAnalysis } from "./newrelic.js";
import type { PrometheusAccess } from "./prometheus/access.js";

/** The providers of the sources that are not Prometheus. */
export function metricSources(access: SourceAccess): Partial<Record<MetricProviderType, AnalysisProvider>> {
  return {
    datadog: datadogAnalysis(access),
    newrelic: newRelicAnalysis(access),
    cloudwatch: cloudWatchAnalysis(access),
    graphite: graphiteAnalysis(access),
    influxdb: influxDbAnalysis(access),
  };
}

/**
 * The sources' access from the Prometheus rules: a source's address is judged as a `spec.prometheusURL`
 * would be (the controller's URL policy, with its Service check), its Secret read and bound the same way.
 */
export function sourceAccessOf(prometheus: PrometheusAccess): SourceAccess {
  return {
    refuseUrl: async (app: CanaryApp, url: string) => {
      const { secretRef: _secret, ...settings } = app.spec.prometheus ?? {};
      const asPrometheus = { ...app, spec: { ...app.spec, prometheusURL: url, prometheus: settings } };
      const refusal = await prometheus.check(asPrometheus);
      return refusal?.message.replaceAll("spec.prometheusURL", "provider.address");
    },
    readSecret: prometheus.readSecret,
    credentialsMayGo: prometheus.credentialsMayGo,
  };
}
