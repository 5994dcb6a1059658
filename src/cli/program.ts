/**
 * The commands of `kubectl canaryapp`, parsed by commander; main.ts runs them.
 */
import { Command, CommanderError, Option } from "commander";
import { dumpYaml } from "@kubernetes/client-node";
import { KubeApiError, toError } from "../kube/errors.js";
import type { CanaryApp } from "../api/types.js";
import { controlVerb, type Control } from "./controls.js";
import { applyWatched, Cluster, type ConnectionFlags } from "./kube.js";
import { historyRows, renderHistory } from "./history.js";
import { renderSnapshot, type Snapshot } from "./view.js";
import { judge, type WaitVerdict, type WantedState } from "./wait.js";

/**
 * Exit codes. 0 and 1 are kubectl's (success; any error, including bad usage); `wait` adds two so that a
 * pipeline can tell a release that failed from one that took too long.
 */
export const EXIT = {
  ok: 0,
  error: 1,
  /** `wait`: the app settled in the other state (e.g. rolled back while waiting for healthy). */
  otherState: 2,
  /** `wait`: --timeout passed first. */
  timeout: 3,
} as const;

type Output = "json" | "yaml" | "wide" | "name";

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  isTTY: boolean;
}

/** Thrown to end with a code and a message on stderr. */
class Exit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const resource = (name: string) => `canaryapp.canaryapp.io/${name}`;

function printObject(io: Io, object: unknown, output: Output | undefined, name: string): boolean {
  if (output === "json") io.out(JSON.stringify(object, null, 2));
  else if (output === "yaml") io.out(dumpYaml(object).trimEnd());
  else if (output === "name") io.out(resource(name));
  else return false;
  return true;
}

/** Parses kubectl-style durations for --timeout: 90s, 10m, 1h, 1m30s, or a bare number of seconds. */
export function parseTimeout(text: string): number {
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (match === null || text === "") throw new Error(`invalid --timeout "${text}": use forms like 90s, 10m, 1h`);
  const [, h, m, s] = match;
  return ((Number(h ?? 0) * 60 + Number(m ?? 0)) * 60 + Number(s ?? 0)) * 1000;
}

function connectionFlags(command: Command): ConnectionFlags {
  const opts = command.optsWithGlobals<ConnectionFlags>();
  return {
    ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.context !== undefined ? { context: opts.context } : {}),
    ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
  };
}

/** Watches the app until `judge` is no longer pending, or the timeout passes. */
function waitUntil(
  cluster: Cluster,
  name: string,
  want: WantedState,
  timeoutMs: number,
): Promise<WaitVerdict | "timeout"> {
  return new Promise((resolve) => {
    const [source] = cluster.watchSources(name);
    const timer = setTimeout(() => finish("timeout"), timeoutMs);
    const watch = cluster.follow(source!, (objects) => {
      const app = objects[0] as CanaryApp | undefined;
      if (app === undefined) {
        finish({ kind: "other", message: `${resource(name)} was deleted` });
        return;
      }
      const verdict = judge(app, want);
      if (verdict.kind !== "pending") finish(verdict);
    });
    function finish(result: WaitVerdict | "timeout"): void {
      clearTimeout(timer);
      watch.stop();
      resolve(result);
    }
  });
}

/** Follows the app and its children, printing the view on every change until interrupted. */
async function watchView(cluster: Cluster, name: string, io: Io, wide: boolean): Promise<never> {
  let snapshot: Partial<Snapshot> = await cluster.snapshot(name);
  let pending: NodeJS.Timeout | undefined;
  let last = "";
  const render = (force: boolean) => {
    pending = undefined;
    const { app, deployments = [], pods = [], virtualService, httpRoute, events = [] } = snapshot;
    if (app === undefined) return;
    const text = renderSnapshot(
      { app, deployments, pods, virtualService, ...(httpRoute !== undefined ? { httpRoute } : {}), events },
      { now: new Date(), wide },
    );
    if (text === last && !force) return;
    last = text;
    // A terminal shows one view, redrawn in place; a pipe gets each view in turn, separated by a blank line.
    if (io.isTTY) io.out(`\x1b[H\x1b[2J${text}`);
    else io.out(`${text}\n`);
  };
  render(true);
  for (const source of cluster.watchSources(name, snapshot.app?.spec.mesh)) {
    cluster.follow(source, (objects) => {
      snapshot = applyWatched(snapshot, source.key, objects);
      // Changes come in bursts (status, then weights, then events): draw once per burst.
      pending ??= setTimeout(() => render(false), 100);
    });
  }
  // Ages in a terminal move with the clock; redrawing them reads nothing from the API server.
  if (io.isTTY) setInterval(() => render(false), 1000);
  return new Promise<never>(() => undefined);
}

/** Builds the program; `io` and the exit handling are injectable for tests. */
export function buildProgram(io: Io): Command {
  const program = new Command("kubectl canaryapp");
  program
    .description("Inspect and drive CanaryApp rollouts")
    .addOption(new Option("-n, --namespace <namespace>", "the namespace (default: the context's, else default)"))
    .addOption(new Option("--context <context>", "the kubeconfig context to use"))
    .addOption(new Option("--kubeconfig <path>", "the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"))
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
    .addHelpText(
      "after",
      `\nExit codes: ${EXIT.ok} done; ${EXIT.error} error; wait only: ${EXIT.otherState} the app settled in the other state (the reason is printed), ${EXIT.timeout} timed out.`,
    );

  const outputOption = () =>
    new Option("-o, --output <format>", "output format").choices(["json", "yaml", "wide", "name"]);

  program
    .command("get")
    .description("show a CanaryApp, its Deployments, pods and traffic weights; -w follows it live")
    .argument("<name>")
    .option("-w, --watch", "keep watching and redraw on every change")
    .addOption(outputOption())
    .action(async (name: string, opts: { watch?: boolean; output?: Output }, command: Command) => {
      const cluster = new Cluster(connectionFlags(command));
      if (opts.watch) await watchView(cluster, name, io, opts.output === "wide");
      const snapshot = await cluster.snapshot(name);
      if (printObject(io, snapshot.app, opts.output, name)) return;
      io.out(renderSnapshot(snapshot, { now: new Date(), wide: opts.output === "wide" }));
    });

  const control = (verb: Control, description: string) => {
    const command = program.command(verb).description(description).argument("<name>");
    if (verb === "retry") command.argument("[image]", "the failed image to test again (default: spec.image)");
    return command
      .addOption(outputOption().choices(["json", "yaml", "name"]))
      .action(async (name: string, ...rest: unknown[]) => {
        const cmd = rest[rest.length - 1] as Command;
        const image = verb === "retry" && typeof rest[0] === "string" ? rest[0] : undefined;
        const opts = cmd.opts<{ output?: Output }>();
        const cluster = new Cluster(connectionFlags(cmd));
        const patched = await cluster.control(name, verb, image);
        if (!printObject(io, patched, opts.output, name)) io.out(`${resource(name)} ${controlVerb(verb)}`);
      });
  };
  control("promote", "promote the image under test now (canaryapp.io/promote=now)");
  control("abort", "abort the test and roll back now (canaryapp.io/abort=now)");
  control("retry", "test a failed image again (canaryapp.io/retry=IMAGE)");
  control("pause", "hold the test at its current step (canaryapp.io/paused=true)");
  control("resume", "continue a paused test (removes canaryapp.io/paused)");
  control("approve", "start the next batch of a batch release waiting for approval (canaryapp.io/approve=now)");

  program
    .command("set")
    .description("change a CanaryApp's spec")
    .command("image")
    .description("deploy a new image: sets spec.image, which starts a test of it")
    .argument("<name>")
    .argument("<image>")
    .addOption(outputOption().choices(["json", "yaml", "name"]))
    .action(async (name: string, image: string, opts: { output?: Output }, command: Command) => {
      const cluster = new Cluster(connectionFlags(command));
      const patched = await cluster.setImage(name, image);
      if (!printObject(io, patched, opts.output, name)) io.out(`${resource(name)} image updated`);
    });

  program
    .command("history")
    .description("failed images, newest first: when, why, the measured value and the query that judged it")
    .argument("<name>")
    .addOption(outputOption())
    .action(async (name: string, opts: { output?: Output }, command: Command) => {
      const cluster = new Cluster(connectionFlags(command));
      const rows = historyRows(await cluster.getApp(name));
      if (opts.output === "name") throw new Exit(EXIT.error, "error: -o name does not apply to history");
      if (printObject(io, rows, opts.output, name)) return;
      io.out(renderHistory(rows, opts.output === "wide"));
    });

  program
    .command("wait")
    .description("wait until the current spec.image is promoted (healthy) or has failed")
    .argument("<name>")
    .addOption(new Option("--for <state>", "the state to wait for").choices(["healthy", "failed"]).default("healthy"))
    .option("--timeout <duration>", "give up after this long (e.g. 90s, 10m)", "10m")
    .action(async (name: string, opts: { for: WantedState; timeout: string }, command: Command) => {
      const timeoutMs = parseTimeout(opts.timeout);
      const cluster = new Cluster(connectionFlags(command));
      await cluster.getApp(name); // NotFound is an error, not something to wait for.
      const verdict = await waitUntil(cluster, name, opts.for, timeoutMs);
      if (verdict === "timeout") {
        throw new Exit(
          EXIT.timeout,
          `error: timed out after ${opts.timeout} waiting for ${resource(name)} to be ${opts.for}`,
        );
      }
      if (verdict.kind === "other") {
        throw new Exit(EXIT.otherState, `error: ${resource(name)} will not become ${opts.for}: ${verdict.message}`);
      }
      io.out(`${resource(name)} condition met: ${verdict.message}`);
    });

  program
    .command("dashboard")
    .description("serve a live web page of the CanaryApps, from watches with your kubeconfig's rights (Ctrl-C ends it)")
    .option("--address <host:port>", "where to listen (loopback unless you name another address)", "127.0.0.1:3100")
    .option("-A, --all-namespaces", "show the CanaryApps of every namespace")
    .option("--read-only", "hide the controls, and refuse them")
    .action(async (opts: { address: string; allNamespaces?: boolean; readOnly?: boolean }, command: Command) => {
      // Loaded only here: the other verbs need nothing of the server.
      const { startDashboard } = await import("../dashboard/command.js");
      const dashboard = await startDashboard({
        ...connectionFlags(command),
        address: opts.address,
        allNamespaces: opts.allNamespaces ?? false,
        readOnly: opts.readOnly ?? false,
      });
      io.out(`Dashboard of ${dashboard.scope}${opts.readOnly ? " (read-only)" : ""}: ${dashboard.url}`);
      return new Promise<never>(() => undefined);
    });

  return program;
}

/** Runs the plugin with `argv` (the arguments after the plugin name); resolves to the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.error;
    if (error instanceof Exit) {
      io.err(error.message);
      return error.code;
    }
    const e = toError(error);
    io.err(
      e instanceof KubeApiError ? `Error from server (${e.reason || e.code}): ${e.message}` : `error: ${e.message}`,
    );
    return EXIT.error;
  }
}
