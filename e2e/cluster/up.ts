#!/usr/bin/env node
/**
 * Starts a local control plane and keeps it running until Ctrl-C:
 *   node dist/e2e/cluster/up.js [--profile api|cluster] [--gateway-api]
 * Prints `export KUBECONFIG=...` on stdout, so `eval "$(... | head -1)"` or copy-paste gives a shell kubectl access.
 */
import { parseArgs } from "node:util";
import { cliLogger, parseProfile, reportFailure, UsageError } from "./cli-common.js";
import { startControlPlane } from "./control-plane.js";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      profile: { type: "string", default: "cluster" },
      "gateway-api": { type: "boolean", default: false },
    },
  });
  const profile = parseProfile(values.profile);
  // handleSignals: Ctrl-C stops every component in order, removes the work folder and exits.
  const cp = await startControlPlane({
    profile,
    log: cliLogger(),
    handleSignals: true,
    gatewayApi: values["gateway-api"],
  });
  process.stdout.write(`export KUBECONFIG=${cp.kubeconfigPath}\n`);
  process.stderr.write(`control plane (${profile}) is up at ${cp.server}; Ctrl-C stops it\n`);
  // The components are child processes of ours; this timer only makes the wait explicit.
  setInterval(() => undefined, 1 << 30);
}

main().catch((err: unknown) => {
  reportFailure(err);
  process.exit(err instanceof UsageError ? 2 : 1);
});
