import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** A metrics endpoint whose values the test sets: what a real app's errors and latency would be. */
export interface TestExporter {
  /** `127.0.0.1:<port>`, for Prometheus' scrape targets. */
  readonly target: string;
  /** Sets `metric{app="<app>"}` to `value`; the series appears at the next scrape. */
  set(metric: string, app: string, value: number): void;
  /** How many times /metrics was served. */
  scrapes(): number;
  stop(): Promise<void>;
}

/** The series a rollout test's checks query. */
export const TEST_METRICS = { errors: "canary_test_errors", latency: "canary_test_latency_ms" } as const;

/** Serves the set values in the Prometheus text format on a free loopback port. */
export async function startTestExporter(): Promise<TestExporter> {
  const values = new Map<string, Map<string, number>>();
  let scrapes = 0;
  const server = createServer((request, response) => {
    if (request.url !== "/metrics") {
      response.writeHead(404).end();
      return;
    }
    scrapes++;
    const lines: string[] = [];
    for (const [metric, series] of [...values].sort(([a], [b]) => a.localeCompare(b))) {
      lines.push(`# TYPE ${metric} gauge`);
      for (const [app, value] of series) lines.push(`${metric}{app=${JSON.stringify(app)}} ${value}`);
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
      let series = values.get(metric);
      if (series === undefined) values.set(metric, (series = new Map<string, number>()));
      series.set(app, value);
    },
    scrapes: () => scrapes,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
