#!/usr/bin/env node
/**
 * Runs a command against a fresh local control plane:
 *   node dist/e2e/cluster/with-cluster.js --profile api|cluster [--keep] [--audit] [--gateway-api] -- <command...>
 * The command gets KUBECONFIG and CANARYAPP_TEST_PROFILE; the control plane is stopped afterwards and the
 * command's exit code is ours. --keep leaves the work folder (component logs, kubeconfig) in place. --audit has
 * kube-apiserver audit the writes to the controller's objects (e2e/cluster/audit.ts) and gives the command the
 * log's path as CANARYAPP_AUDIT_LOG. --gateway-api also installs the Gateway API CRDs (`make gateway-api-crds`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:os";
import { parseArgs } from "node:util";
import { stopAll, stopAllNow } from "./cleanup.js";
import { cliLogger, parseProfile, reportFailure, UsageError } from "./cli-common.js";
import { startControlPlane } from "./control-plane.js";

const USAGE = "usage: with-cluster --profile api|cluster [--keep] [--audit] [--gateway-api] -- <command...>";

let child: ChildProcess | undefined;
let stopping = false;

function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 1);
}

// Signals go to the command first, so that it can clean up against a live API server; the control plane is
// stopped when the command has exited. Before and after the command, a signal stops the control plane at once.
function onSignal(signal: NodeJS.Signals): void {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill(signal);
    return;
  }
  if (stopping) {
    stopAllNow();
    process.exit(signalExitCode(signal));
  }
  stopping = true;
  void stopAll().finally(() => process.exit(signalExitCode(signal)));
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      profile: { type: "string" },
      keep: { type: "boolean", default: false },
      audit: { type: "boolean", default: false },
      "gateway-api": { type: "boolean", default: false },
    },
    allowPositionals: true,
  });
  const profile = parseProfile(values.profile);
  const [command, ...args] = positionals;
  if (command === undefined) throw new UsageError(USAGE);

  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const log = cliLogger();
  const cp = await startControlPlane({
    profile,
    log,
    handleSignals: false,
    audit: values.audit,
    gatewayApi: values["gateway-api"],
  });
  if (stopping) return 1;
  let exitCode: number;
  try {
    child = spawn(command, args, {
      stdio: "inherit",
      env: {
        ...process.env,
        KUBECONFIG: cp.kubeconfigPath,
        CANARYAPP_TEST_PROFILE: profile,
        ...(cp.auditLogPath !== undefined && { CANARYAPP_AUDIT_LOG: cp.auditLogPath }),
      },
    });
    exitCode = await new Promise<number>((resolve) => {
      child?.once("error", (err) => {
        log.error({ command, err: err.message }, "command could not be started");
        resolve(127);
      });
      child?.once("exit", (code, signal) => resolve(code ?? (signal ? signalExitCode(signal) : 1)));
    });
  } finally {
    await cp.stop({ keepWorkDir: values.keep });
  }
  if (values.keep) log.info({ workDir: cp.workDir }, "work folder kept");
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    reportFailure(err);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
