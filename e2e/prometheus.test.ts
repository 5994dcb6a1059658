import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { PrerequisiteError } from "./cluster/toolchain.js";
import { prometheusConfig, SCRAPE_JOB, startPrometheus } from "./prometheus.js";

/** The value of an instant query with one series, or undefined while there is none. */
async function queryOne(url: string, promql: string): Promise<number | undefined> {
  const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await response.json()) as { data: { result: { value: [number, string] }[] } };
  const first = body.data.result[0];
  return first ? Number(first.value[1]) : undefined;
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs} ms`);
    await sleep(200);
  }
}

describe("startPrometheus", () => {
  test("scrapes its targets, follows setTargets, and leaves nothing behind", async () => {
    let scrapes = 0;
    const target = createServer((req, res) => {
      if (req.url !== "/metrics") return void res.writeHead(404).end();
      scrapes++;
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
      res.end(`# TYPE canaryapp_e2e_probe gauge\ncanaryapp_e2e_probe 42\n`);
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    const address = `127.0.0.1:${(target.address() as AddressInfo).port}`;

    const prometheus = await startPrometheus({ targets: [], handleSignals: false });
    try {
      assert.match(prometheus.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(await queryOne(prometheus.url, "canaryapp_e2e_probe"), undefined);

      await prometheus.setTargets([address]);
      assert.equal(await eventually("probe metric", () => queryOne(prometheus.url, "canaryapp_e2e_probe")), 42);
      assert.equal(await queryOne(prometheus.url, `up{job="${SCRAPE_JOB}"}`), 1);
      const seen = scrapes;
      await sleep(2_500);
      assert.ok(scrapes - seen >= 2, `scraped about every second (${scrapes - seen} in 2.5 s)`);
    } finally {
      await prometheus.stop();
      await new Promise<void>((resolve) => target.close(() => resolve()));
    }
    assert.equal(existsSync(prometheus.workDir), false, "work folder removed");
    await assert.rejects(fetch(`${prometheus.url}/-/ready`), "server gone");
    await prometheus.stop(); // idempotent
  });

  test("a missing binary is one clear line naming make deps", async () => {
    await assert.rejects(
      startPrometheus({ targets: [], binary: "/nonexistent/prometheus", handleSignals: false }),
      (err: unknown) => {
        assert.ok(err instanceof PrerequisiteError);
        assert.equal(err.message, "prometheus not found at /nonexistent/prometheus: run `make deps` to install it");
        return true;
      },
    );
  });

  test("the configuration scrapes every target with the interval as timeout", () => {
    const config = JSON.parse(prometheusConfig(["a:1", "b:2"], 2)) as {
      global: Record<string, string>;
      scrape_configs: { static_configs: { targets: string[] }[] }[];
    };
    assert.deepEqual(config.global, { scrape_interval: "2s", scrape_timeout: "2s", evaluation_interval: "2s" });
    assert.deepEqual(config.scrape_configs[0]?.static_configs[0]?.targets, ["a:1", "b:2"]);
  });
});
