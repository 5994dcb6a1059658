/**
 * The canaryapp Grafana dashboard, as code: built with Grafana's typed foundation SDK from the metrics the
 * controller exports (src/server/metrics.ts, src/server/app-metrics.ts, src/canary/metrics-observer.ts, prom-client's
 * process metrics).
 * `make dashboard` writes it to config/grafana/ (JSON and a ConfigMap for the Grafana sidecar) and into the
 * Helm chart; a test keeps the committed files equal to what this code builds.
 */
import * as dashboard from "@grafana/grafana-foundation-sdk/dashboard";
import { DataqueryBuilder, PromQueryFormat } from "@grafana/grafana-foundation-sdk/prometheus";
import * as stat from "@grafana/grafana-foundation-sdk/stat";
import * as statetimeline from "@grafana/grafana-foundation-sdk/statetimeline";
import * as table from "@grafana/grafana-foundation-sdk/table";
import * as timeseries from "@grafana/grafana-foundation-sdk/timeseries";

const DATASOURCE = { type: "prometheus", uid: "${datasource}" };
/** The series of the apps chosen in the dashboard's variables. */
const APP = 'namespace=~"$namespace", name=~"$app"';

function query(expr: string, legend: string): DataqueryBuilder {
  return new DataqueryBuilder().expr(expr).legendFormat(legend).datasource(DATASOURCE);
}

function graph(
  title: string,
  description: string,
  unit: string,
  ...queries: DataqueryBuilder[]
): timeseries.PanelBuilder {
  const panel = new timeseries.PanelBuilder()
    .title(title)
    .description(description)
    .datasource(DATASOURCE)
    .unit(unit)
    .height(8)
    .span(12);
  for (const q of queries) panel.withTarget(q);
  return panel;
}

/** Builds the dashboard. */
export function buildDashboard(): dashboard.Dashboard {
  const phase = new statetimeline.PanelBuilder()
    .title("Phase")
    .description("The CanaryApp's phase over time (canaryapp_phase is 1 for the current phase).")
    .datasource(DATASOURCE)
    .height(8)
    .span(24)
    .withTarget(
      query(`max by (namespace, name, phase) (canaryapp_phase{${APP}}) == 1`, "{{namespace}}/{{name}} {{phase}}"),
    );

  // The mirror and A/B phases (ADR 0027) come before the weighted steps, at weight 0: the share mirrored is a
  // percentage as the weight is; the A/B phase is on or off, on an axis of its own.
  const weight = graph(
    "Secondary weight",
    "Percentage of traffic routed to the version under test; in the mirror phase, the percentage of live traffic mirrored to it (its answers discarded); on the right axis, the A/B phase: on while the requests matching spec.analysis.match go to it.",
    "percent",
    query(`canaryapp_secondary_weight{${APP}}`, "{{namespace}}/{{name}}").refId("A"),
    query(`canaryapp_secondary_mirror_percent{${APP}}`, "{{namespace}}/{{name}} mirrored").refId("B"),
    query(`canaryapp_secondary_matched{${APP}}`, "{{namespace}}/{{name}} A/B").refId("C"),
  )
    .min(0)
    .max(100)
    .overrideByQuery("C", [
      { id: "unit", value: "bool_on_off" },
      { id: "min", value: 0 },
      { id: "max", value: 1 },
      { id: "custom.axisPlacement", value: "right" },
      { id: "custom.lineInterpolation", value: "stepAfter" },
    ]);

  const analyses = graph(
    "Analyses and failed checks against the threshold",
    "Analyses run by result, and the failed checks of the current test (the test rolls back when they reach spec.analysis.threshold).",
    "short",
    query(
      `sum by (namespace, name, result) (increase(canaryapp_analysis_total{${APP}}[$__rate_interval]))`,
      "{{namespace}}/{{name}} {{result}}",
    ),
    query(`canaryapp_failed_checks{${APP}}`, "{{namespace}}/{{name}} failed checks"),
  );

  const failed = new stat.PanelBuilder()
    .title("Rolled back (failed images)")
    .description("Releases rolled back in the time range: each one's image is recorded in status.failedImages.")
    .datasource(DATASOURCE)
    .height(8)
    .span(12)
    .withTarget(
      query(
        `sum by (namespace, name) (increase(canaryapp_transitions_total{${APP}, reason="RolledBack"}[$__range]))`,
        "{{namespace}}/{{name}}",
      ),
    );

  const steps = graph(
    "Step rate",
    "Traffic steps advanced, promotions and rollbacks per minute; the time between two StepAdvanced is a step's duration.",
    "short",
    query(
      `sum by (namespace, name, reason) (increase(canaryapp_transitions_total{${APP}, reason=~"StepAdvanced|Promoted|RolledBack"}[$__rate_interval]))`,
      "{{namespace}}/{{name}} {{reason}}",
    ),
  );

  const checks = graph(
    "Analysis values against thresholds",
    "What each check of the last analysis measured (a webhook: the HTTP status it answered), beside the min and max it must stay within.",
    "short",
    query(`canaryapp_analysis_value{${APP}}`, "{{namespace}}/{{name}} {{check}}"),
    query(`canaryapp_analysis_threshold_min{${APP}}`, "{{namespace}}/{{name}} {{check}} min"),
    query(`canaryapp_analysis_threshold_max{${APP}}`, "{{namespace}}/{{name}} {{check}} max"),
  ).span(24);

  const stepDurations = graph(
    "Step durations",
    "How long traffic steps lasted: the mean over the time range, and the p95 of the steps that ended recently.",
    "s",
    query(
      `sum by (namespace, name) (increase(canaryapp_step_duration_seconds_sum{${APP}}[$__range])) / sum by (namespace, name) (increase(canaryapp_step_duration_seconds_count{${APP}}[$__range]))`,
      "{{namespace}}/{{name}} mean",
    ),
    query(
      `histogram_quantile(0.95, sum by (namespace, name, le) (rate(canaryapp_step_duration_seconds_bucket{${APP}}[$__rate_interval])))`,
      "{{namespace}}/{{name}} p95",
    ),
  );

  const failedImages = new table.PanelBuilder()
    .title("Failed images")
    .description("The images each app's status records as failed (status.failedImages), with the reason, and how many.")
    .datasource(DATASOURCE)
    .height(8)
    .span(12)
    .withTarget(
      query(`canaryapp_failed_image_info{${APP}} == 1`, "{{namespace}}/{{name}} {{image}} ({{reason}})")
        .instant()
        .format(PromQueryFormat.Table),
    )
    .withTarget(query(`canaryapp_failed_images{${APP}}`, "{{namespace}}/{{name}} failed images").instant());

  const apiLatency = graph(
    "API request latency (p50, p95)",
    "Time the API server took to answer the controller's requests (applies, deletes, status writes), by verb.",
    "s",
    query(
      `histogram_quantile(0.5, sum by (le, verb) (rate(canaryapp_api_request_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))`,
      "p50 {{verb}}",
    ),
    query(
      `histogram_quantile(0.95, sum by (le, verb) (rate(canaryapp_api_request_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))`,
      "p95 {{verb}}",
    ),
  );

  const reconciles = graph(
    "Reconciles",
    "Reconciles per second, by result.",
    "ops",
    query(
      `sum by (result) (rate(canaryapp_reconcile_duration_seconds_count{job=~"$job"}[$__rate_interval]))`,
      "{{result}}",
    ),
  );
  const latency = graph(
    "Reconcile duration (p50, p95)",
    "Time one reconcile took, API calls included.",
    "s",
    query(
      `histogram_quantile(0.5, sum by (le) (rate(canaryapp_reconcile_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))`,
      "p50",
    ),
    query(
      `histogram_quantile(0.95, sum by (le) (rate(canaryapp_reconcile_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))`,
      "p95",
    ),
  );
  const errors = graph(
    "Reconcile errors",
    "Reconciles that failed per second (retried with backoff, or terminal).",
    "ops",
    query(`sum by (instance) (rate(canaryapp_reconcile_errors_total{job=~"$job"}[$__rate_interval]))`, "{{instance}}"),
  );
  const queue = graph(
    "Work queue depth and leader",
    "Keys waiting in the work queue; 1 on the replica that holds the lease.",
    "short",
    query(`canaryapp_workqueue_depth{job=~"$job"}`, "queue {{instance}}"),
    query(`canaryapp_leader{job=~"$job"}`, "leader {{instance}}"),
  );
  const writes = graph(
    "API writes",
    "Writes to the API server per second, by kind and verb.",
    "ops",
    query(`sum by (kind, verb) (rate(canaryapp_api_writes_total{job=~"$job"}[$__rate_interval]))`, "{{verb}} {{kind}}"),
  );
  const memory = graph(
    "Memory",
    "Resident memory and V8 heap of each replica.",
    "bytes",
    query(`process_resident_memory_bytes{job=~"$job"}`, "rss {{instance}}"),
    query(`nodejs_heap_size_used_bytes{job=~"$job"}`, "heap {{instance}}"),
  );

  return new dashboard.DashboardBuilder("canaryapp")
    .uid("canaryapp")
    .description("CanaryApp releases and the canaryapp controller.")
    .tags(["canaryapp", "istio", "progressive-delivery"])
    .refresh("30s")
    .time({ from: "now-3h", to: "now" })
    .timezone("browser")
    .withVariable(new dashboard.DatasourceVariableBuilder("datasource").label("Prometheus").type("prometheus"))
    .withVariable(
      new dashboard.QueryVariableBuilder("job")
        .label("Controller job")
        .datasource(DATASOURCE)
        .query("label_values(canaryapp_reconcile_duration_seconds_count, job)")
        .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
        .includeAll(true)
        .allValue(".*")
        .multi(true),
    )
    .withVariable(
      new dashboard.QueryVariableBuilder("namespace")
        .label("Namespace")
        .datasource(DATASOURCE)
        .query("label_values(canaryapp_phase, namespace)")
        .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
        .includeAll(true)
        .allValue(".*")
        .multi(true),
    )
    .withVariable(
      new dashboard.QueryVariableBuilder("app")
        .label("CanaryApp")
        .datasource(DATASOURCE)
        .query('label_values(canaryapp_phase{namespace=~"$namespace"}, name)')
        .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
        .includeAll(true)
        .allValue(".*")
        .multi(true),
    )
    .withRow(new dashboard.RowBuilder("Releases"))
    .withPanel(phase)
    .withPanel(weight)
    .withPanel(analyses)
    .withPanel(failed)
    .withPanel(steps)
    .withPanel(checks)
    .withPanel(stepDurations)
    .withPanel(failedImages)
    .withRow(new dashboard.RowBuilder("Controller"))
    .withPanel(reconciles)
    .withPanel(latency)
    .withPanel(errors)
    .withPanel(queue)
    .withPanel(writes)
    .withPanel(memory)
    .withPanel(apiLatency)
    .build();
}

/** Every PromQL expression of the dashboard's panels and variables, in order. */
export function dashboardExpressions(board: dashboard.Dashboard): string[] {
  const out: string[] = [];
  for (const panel of board.panels ?? []) {
    for (const target of ("targets" in panel ? (panel.targets ?? []) : []) as { expr?: unknown }[]) {
      if (typeof target.expr === "string") out.push(target.expr);
    }
  }
  return out;
}

/** The dashboard as committed: JSON with two-space indentation and a final newline. */
export function dashboardJson(board: dashboard.Dashboard = buildDashboard()): string {
  return `${JSON.stringify(board, null, 2)}\n`;
}

/** A ConfigMap that Grafana's dashboard sidecar loads (it watches ConfigMaps labelled grafana_dashboard: "1"). */
export function dashboardConfigMap(json: string = dashboardJson()): string {
  const body = json
    .trimEnd()
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
  return [
    "# Generated by `make dashboard` from tools/grafana/dashboard.ts: do not edit.",
    "apiVersion: v1",
    "kind: ConfigMap",
    "metadata:",
    "  name: canaryapp-dashboard",
    "  labels:",
    '    grafana_dashboard: "1"',
    "data:",
    "  canaryapp-dashboard.json: |-",
    body,
    "",
  ].join("\n");
}
