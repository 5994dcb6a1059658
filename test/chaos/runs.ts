import { parseArgs } from "node:util";
import type { ChaosOptions, Fault } from "./suite.js";

/** The faults of `make chaos`, made in turn. */
export const FAULTS: readonly Fault[] = ["kill", "prometheusDown", "kill", "apiserver", "kill", "prometheusHang"];

/**
 * The runs `make chaos` makes, from flags or environment variables (flags win): one per restart delay, one with
 * two replicas (leader failover) unless turned off, and the upgrade: two replicas taken by rolling updates
 * through share counts (1 is unsharded) while the apps roll out, unless turned off.
 *   --duration=S (CHAOS_DURATION, 180)  --apps=N (CHAOS_APPS, 12)  --restart-delays=0,3,20 (CHAOS_RESTART_DELAYS)
 *   --replicas=1|2 (CHAOS_REPLICAS, 1)  --failover=true|false (CHAOS_FAILOVER, true)  --interval=S (CHAOS_INTERVAL, 2)
 *   --apiserver-outage=S (CHAOS_APISERVER_OUTAGE, 15)
 *   --upgrade=true|false (CHAOS_UPGRADE, true)  --upgrade-shares=1,32,64 (CHAOS_UPGRADE_SHARES)
 *   --upgrade-apps=N (CHAOS_UPGRADE_APPS, 20)  --upgrade-duration=S (CHAOS_UPGRADE_DURATION, 60: the waves go on
 *   at least this long, and until the last rolling update is over)
 *   --only=faults|upgrade (CHAOS_ONLY): only the fault runs, or only the upgrade
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
      upgrade: { type: "string", default: env["CHAOS_UPGRADE"] ?? "true" },
      "upgrade-shares": { type: "string", default: env["CHAOS_UPGRADE_SHARES"] ?? "1,32,64" },
      "upgrade-apps": { type: "string", default: env["CHAOS_UPGRADE_APPS"] ?? "20" },
      "upgrade-duration": { type: "string", default: env["CHAOS_UPGRADE_DURATION"] ?? "60" },
      only: { type: "string", default: env["CHAOS_ONLY"] ?? "" },
    },
  });
  const number = (name: string, text: string | undefined): number => {
    const value = Number(text);
    if (text === undefined || text === "" || !Number.isFinite(value) || value < 0) {
      throw new Error(`chaos: --${name} must be a number ≥ 0, not ${text}`);
    }
    return value;
  };
  const only = values.only ?? "";
  if (!["", "faults", "upgrade"].includes(only)) {
    throw new Error(`chaos: --only must be "faults" or "upgrade", not ${only}`);
  }
  const off = (text: string | undefined) => ["false", "0", "no"].includes(text ?? "");
  const base = {
    durationMs: number("duration", values.duration) * 1000,
    apps: number("apps", values.apps),
    intervalSeconds: number("interval", values.interval),
    faults: FAULTS,
    faultGapMs: [3_000, 8_000] as [number, number],
    apiserverOutageMs: number("apiserver-outage", values["apiserver-outage"]) * 1000,
    prometheusFaultMs: 5_000,
  };
  const replicas: 1 | 2 = number("replicas", values.replicas) === 2 ? 2 : 1;
  const runs: ChaosOptions[] = [];
  if (only !== "upgrade") {
    runs.push(
      ...(values["restart-delays"] ?? "0")
        .split(",")
        .map((d) => ({ ...base, replicas, restartDelayMs: number("restart-delays", d) * 1000 })),
    );
    if (!off(values.failover) && replicas === 1) runs.push({ ...base, replicas: 2, restartDelayMs: 0 });
  }
  if (only === "upgrade" || (only === "" && !off(values.upgrade))) {
    const counts = (values["upgrade-shares"] ?? "").split(",").map((c) => number("upgrade-shares", c));
    if (counts.length < 2 || counts.some((c) => c < 1 || !Number.isInteger(c))) {
      throw new Error(
        `chaos: --upgrade-shares must be two or more whole share counts, not ${values["upgrade-shares"]}`,
      );
    }
    runs.push({
      ...base,
      durationMs: number("upgrade-duration", values["upgrade-duration"]) * 1000,
      apps: number("upgrade-apps", values["upgrade-apps"]),
      replicas: 2,
      restartDelayMs: 0,
      faults: [],
      shareCounts: counts,
    });
  }
  return runs;
}
