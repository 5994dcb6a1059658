import { parseArgs } from "node:util";
import type { ChaosOptions, Fault } from "./suite.js";

/** The faults of `make chaos`, made in turn. */
export const FAULTS: readonly Fault[] = ["kill", "prometheusDown", "kill", "apiserver", "kill", "prometheusHang"];

/**
 * The runs `make chaos` makes, from flags or environment variables (flags win): one per restart delay, and
 * one with two replicas (leader failover) unless turned off.
 *   --duration=S (CHAOS_DURATION, 180)  --apps=N (CHAOS_APPS, 12)  --restart-delays=0,3,20 (CHAOS_RESTART_DELAYS)
 *   --replicas=1|2 (CHAOS_REPLICAS, 1)  --failover=true|false (CHAOS_FAILOVER, true)  --interval=S (CHAOS_INTERVAL, 2)
 *   --apiserver-outage=S (CHAOS_APISERVER_OUTAGE, 15)
 */
export function chaosRuns(env: NodeJS.ProcessEnv, args: string[] = []): ChaosOptions[] {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: env["CHAOS_DURATION"] ?? "180" },
      apps: { type: "string", default: env["CHAOS_APPS"] ?? "12" },
      "restart-delays": { type: "string", default: env["CHAOS_RESTART_DELAYS"] ?? "0,3,20" },
      replicas: { type: "string", default: env["CHAOS_REPLICAS"] ?? "1" },
      failover: { type: "string", default: env["CHAOS_FAILOVER"] ?? "true" },
      interval: { type: "string", default: env["CHAOS_INTERVAL"] ?? "2" },
      "apiserver-outage": { type: "string", default: env["CHAOS_APISERVER_OUTAGE"] ?? "15" },
    },
  });
  const number = (name: string, text: string | undefined): number => {
    const value = Number(text);
    if (text === undefined || text === "" || !Number.isFinite(value) || value < 0) {
      throw new Error(`chaos: --${name} must be a number ≥ 0, not ${text}`);
    }
    return value;
  };
  const base = {
    durationMs: number("duration", values.duration) * 1000,
    apps: number("apps", values.apps),
    intervalSeconds: number("interval", values.interval),
    faults: FAULTS,
    faultGapMs: [3_000, 8_000] as [number, number],
    apiserverOutageMs: number("apiserver-outage", values["apiserver-outage"]) * 1000,
    prometheusFaultMs: 5_000,
  };
  const replicas = number("replicas", values.replicas) === 2 ? 2 : 1;
  const runs: ChaosOptions[] = (values["restart-delays"] ?? "0")
    .split(",")
    .map((d) => ({ ...base, replicas, restartDelayMs: number("restart-delays", d) * 1000 }));
  if (!["false", "0", "no"].includes(values.failover ?? "") && replicas === 1) {
    runs.push({ ...base, replicas: 2, restartDelayMs: 0 });
  }
  return runs;
}
