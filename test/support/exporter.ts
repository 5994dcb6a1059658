import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** A metrics endpoint whose values the test sets: what a real app's errors and latency would be. */
export interface TestExporter {
  /** `127.0.0.1:<port>`, for Prometheus' scrape targets. */
  readonly target: string;
  /** Sets `metric{app="<app>"}` to `value`; the series appears at the next scrape. */
  set(metric: string, app: string, value: number): void;
  /** Sets `metric{<labels>}` to `value` (any labels, such as Istio's). */
  setSeries(metric: string, labels: Readonly<Record<string, string>>, value: number): void;
  /** Adds `by` to `metric{<labels>}` (a counter), starting from 0. */
  add(metric: string, labels: Readonly<Record<string, string>>, by: number): void;
  /** How many times /metrics was served. */
  scrapes(): number;
  stop(): Promise<void>;
}

/** The series a rollout test's checks query. */
export const TEST_METRICS = {
  errors: "canary_test_errors",
  latency: "canary_test_latency_ms",
  /** The evidence of traffic the rollout tests' apps give (see rollout-env's TRAFFIC_QUERY). */
  requests: "canary_test_requests",
} as const;

function labelText(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([name, value]) => `${name}=${JSON.stringify(value)}`)
    .join(",");
}

/** Serves the set values in the Prometheus text format on a free loopback port. */
export async function startTestExporter(): Promise<TestExporter> {
  const values = new Map<string, Map<string, number>>();
  let scrapes = 0;
  const seriesOf = (metric: string): Map<string, number> => {
    let series = values.get(metric);
    if (series === undefined) values.set(metric, (series = new Map<string, number>()));
    return series;
  };
  const server = createServer((request, response) => {
    if (request.url !== "/metrics") {
      response.writeHead(404).end();
      return;
    }
    scrapes++;
    const lines: string[] = [];
    for (const [metric, series] of [...values].sort(([a], [b]) => a.localeCompare(b))) {
      lines.push(`# TYPE ${metric} gauge`);
      for (const [labels, value] of series) lines.push(`${metric}{${labels}} ${value}`);
    }
    response.writeHead(200, { "Content-Type": "text/plain; version=0.0.4" }).end(`${lines.join("\n")}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    set(metric, app, value) {
      seriesOf(metric).set(labelText({ app }), value);
    },
    setSeries(metric, labels, value) {
      seriesOf(metric).set(labelText(labels), value);
    },
    add(metric, labels, by) {
      const series = seriesOf(metric);
      const key = labelText(labels);
      series.set(key, (series.get(key) ?? 0) + by);
    },
    scrapes: () => scrapes,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
