/**
 * Every command README.md tells a user to run is run here, verbatim (placeholders such as NAME substituted),
 * or by the test named beside it in COVERAGE. A command added to the README without a place that runs it fails
 * the first test, so the README cannot drift from the code.
 *
 * `make demo` runs exactly as a newcomer runs it (its whole output goes to the test log), then
 * `make demo ARGS=--keep` keeps its cluster and controller up while the "Using it" one-liners are played
 * against the demo's app, and Ctrl-C ends it.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { copyFile, mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { existsSync } from "node:fs";
import { after, describe, test } from "node:test";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { waitFor } from "../../e2e/cluster/wait.js";
import { controllerNodeFlags } from "../../src/node-flags.js";
import { INVARIANTS } from "../chaos/invariants.js";
import { readmeCommands } from "./readme-commands.js";

const root = findRepoRoot();
const README = await readFile(join(root, "README.md"), "utf8");
const APP = "canaryapp-sample";
const NAMESPACE = "canaryapp-demo";

/**
 * Where each README command is run: "here" (this file), or another test file that must contain the given
 * fragments (the lines that run it), so a test that stops running a README command fails here too.
 */
const COVERAGE: { command: RegExp; by: string; contains?: string[] }[] = [
  { command: /^make demo$/, by: "here" },
  { command: /^make demo ARGS=--keep$/, by: "here" },
  { command: /^make help$/, by: "here" },
  { command: /^make cluster-up( PROFILE=api\|cluster)?$/, by: "here" },
  { command: /^make bench$/, by: "here" },
  { command: /^make chaos$/, by: "here" },
  { command: /^make bench-peers$/, by: "here" },
  { command: /^node dist\/src\/main\.js --help$/, by: "here" },
  { command: /^kubectl kustomize config\/default \| kubectl apply --server-side -f -$/, by: "here" },
  {
    command: /^kubectl annotate canaryapp NAME canaryapp\.io\/approve=now --overwrite$/,
    by: "e2e/batch-release.test.ts",
    contains: ['"annotate", "canaryapp", name, "canaryapp.io/approve=now", "--overwrite"'],
  },
  { command: /^kubectl (patch|get|describe|annotate) canaryapp NAME/, by: "here" },
  { command: /^kubectl label secret NAME canaryapp\.io\/credentials=true$/, by: "here" },
  { command: /^kubectl annotate secret NAME canaryapp\.io\/allowed-urls=\S+$/, by: "here" },
  // .ci/run runs `make test`, whose prerequisites are these targets (checked below).
  { command: /^make (test|build|lint|test-unit|test-integration|test-e2e|test-docs)$/, by: ".ci/run (make test)" },
  // make test-e2e builds istioctl first: the e2e tests run it (e2e/istio-validate.test.ts, e2e/istioctl.ts).
  { command: /^make istioctl$/, by: "Makefile", contains: ["test-e2e: build helm istioctl "] },
  // The chart's tests run helm (test/integration/helm-chart.test.ts, e2e/helm-install.test.ts).
  { command: /^make helm$/, by: "Makefile", contains: ["test-integration: build helm ", "test-e2e: build helm "] },
  // make test-integration and make test-e2e fetch the Gateway API's CRDs first: their clusters install them.
  {
    command: /^make gateway-api-crds$/,
    by: "Makefile",
    contains: ["test-integration: build helm gateway-api-crds ", "test-e2e: build helm istioctl gateway-api-crds "],
  },
  {
    command: /^kubectl -n shop annotate service web canaryapp\.io\/adopt=web$/,
    by: "test/integration/adoption.test.ts",
    contains: ["annotate service shop canaryapp\\.io\\/adopt=shop", "await run(kubectl, args"],
  },
  {
    command: /^make install-plugin PREFIX=~\/\.local$/,
    by: "test/integration/kubectl-plugin.test.ts",
    contains: ['"install-plugin", `PREFIX=${prefix}`'],
  },
  {
    command: /^kubectl canaryapp get NAME$/,
    by: "test/integration/kubectl-plugin.test.ts",
    contains: ['plugin("get", "tree")'],
  },
  {
    command: /^kubectl canaryapp get NAME -w$/,
    by: "test/integration/kubectl-plugin-rollout.test.ts",
    contains: ['"canaryapp", "get", name, "-w"'],
  },
  {
    command: /^kubectl canaryapp set image NAME repo\/app:v2$/,
    by: "test/integration/kubectl-plugin-rollout.test.ts",
    contains: ['plugin("set", "image", name, v2)'],
  },
  {
    command: /^kubectl canaryapp pause NAME$/,
    by: "test/integration/kubectl-plugin.test.ts",
    contains: ['plugin("pause", "controls")'],
  },
  {
    command: /^kubectl canaryapp approve NAME$/,
    by: "test/integration/kubectl-plugin.test.ts",
    contains: ['plugin("approve", "controls")'],
  },
  {
    command: /^kubectl canaryapp dashboard$/,
    by: "e2e/dashboard-process.ts",
    contains: ['[...nodeArgs, PLUGIN, "dashboard", "--address", "127.0.0.1:0", ...args]'],
  },
  { command: /^make dashboard-screenshots$/, by: "here" },
  { command: /^make bench-dashboard$/, by: "here" },
  {
    command: /^kubectl canaryapp history NAME$/,
    by: "test/integration/kubectl-plugin-rollout.test.ts",
    contains: ['plugin("history", name)'],
  },
  {
    command: /^kubectl canaryapp wait NAME --for=healthy --timeout=10m$/,
    by: "test/integration/kubectl-plugin-rollout.test.ts",
    contains: ['plugin("wait", name, "--for=healthy", "--timeout=10m")'],
  },
  {
    command: /^kubectl get canaryapp -o wide$/,
    by: "test/integration/kubectl-plugin.test.ts",
    contains: ['["get", "canaryapp", "cols", "-n", namespace, "-o", "wide"]'],
  },
  {
    command:
      /^kubectl -n argocd patch configmap argocd-cm --type merge --patch-file integrations\/argocd\/argocd-cm\.yaml$/,
    by: "e2e/argocd-example.test.ts",
    contains: ['"patch",', '"--patch-file",', '"integrations/argocd/argocd-cm.yaml",'],
  },
  {
    command: /^kubectl diff --server-side -f examples\/argocd-app\/app -n shop$/,
    by: "e2e/argocd-example.test.ts",
    contains: ['["diff", "--server-side", "-f", dir, ...ns()]', 'const APP_DIR = "examples/argocd-app/app"'],
  },
  {
    command:
      /^kubectl apply -n argocd -f examples\/argocd-app\/project\.yaml -f examples\/argocd-app\/application\.yaml$/,
    by: "e2e/argocd-example.test.ts",
    contains: ['"examples/argocd-app/project.yaml",', '"examples/argocd-app/application.yaml",'],
  },
  {
    command: /^helm install canaryapp charts\/canaryapp --namespace canaryapp-system --create-namespace$/,
    by: "e2e/helm-install.test.ts",
    contains: ["`helm install canaryapp ${CHART} --namespace ${SYSTEM_NAMESPACE} --create-namespace ${mode.set}"],
  },
  {
    command: /^kubectl kustomize config\/(default|namespaced)$/,
    by: "test/integration/helm-chart.test.ts",
    contains: ['kustomize(kubectl, repoRoot, "config/default")', 'kustomize(kubectl, repoRoot, "config/namespaced")'],
  },
  {
    // make chart copies the CRDs; the test requires each committed copy to equal its source.
    command: /^make chart$/,
    by: "test/integration/helm-chart.test.ts",
    contains: [
      '["canaryapp.yaml", ["canaryapps.canaryapp.io"]]',
      '"analysis-templates.yaml",',
      'readFile(join(repoRoot, CHART, "crds", file), "utf8")',
      "assert.equal(chart, source",
    ],
  },
  {
    // make dashboard writes generated(); the test requires every committed file to equal it.
    command: /^make dashboard$/,
    by: "test/integration/grafana-dashboard.test.ts",
    contains: ["for (const [file, content] of Object.entries(generated()))"],
  },
  {
    command: /^kubectl apply -n NAMESPACE -f config\/grafana\/canaryapp-dashboard-configmap\.yaml$/,
    by: "test/integration/helm-chart.test.ts",
    contains: [
      '"kubectl apply --dry-run=server -n canaryapp-system -f config/grafana/canaryapp-dashboard-configmap.yaml"',
    ],
  },
];

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs one shell line as a user would type it, from the repository root; its output also goes to the log. It
 * runs in a process group of its own, and a line still running after `timeoutMs` is killed with the whole group:
 * a process it started that outlived the shell would hold the output pipes open, and the test would wait forever.
 */
function sh(line: string, env: NodeJS.ProcessEnv = process.env, timeoutMs = 10 * 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", line], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const run: Run = { code: null, signal: null, stdout: "", stderr: "" };
    child.stdout.on("data", (chunk: Buffer) => (run.stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (run.stderr += chunk.toString()));
    const timer = setTimeout(() => {
      run.stderr += `\n(killed with its process group after ${timeoutMs / 1000} s)`;
      signalGroup(child, "SIGKILL");
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ ...run, code, signal });
    });
  });
}

/**
 * Starts a long-running command of plain words (no shell syntax) in its own process group, as a terminal runs
 * a foreground job; `output` is what it printed so far.
 */
function start(line: string, env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; output: () => string } {
  assert.doesNotMatch(line, /[|&;<>$`'"\\]/, `${line}: start() runs plain words only`);
  const [command = "", ...args] = line.split(/\s+/);
  const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let text = "";
  child.stdout?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  return { child, output: () => text };
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Sends `signal` to the process group `child` leads (spawned `detached`); a group already gone is left be. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

/**
 * Ctrl-C: SIGINT to the whole process group, as a terminal sends it; resolves when the job has ended. make
 * itself dies of the signal (as it does in a terminal), so what the job did is read from its output.
 */
function ctrlC(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (!running(child)) return resolve();
    child.once("close", () => resolve());
    signalGroup(child, "SIGINT");
  });
}

/** Processes whose command line names `text` (a work folder), other than this test's own. */
async function processesNaming(text: string): Promise<string[]> {
  const run = await sh(`pgrep -af -- ${JSON.stringify(text)} || true`);
  return run.stdout.split("\n").filter((l) => l.trim() !== "" && !l.includes("pgrep"));
}

function show(title: string, text: string): void {
  console.log(`# ── ${title}`);
  for (const line of text.trimEnd().split("\n")) console.log(`#   ${line}`);
}

const commands = readmeCommands(README);

describe("README commands", () => {
  test("every command in the README is run by a test", async () => {
    assert.ok(commands.length >= 15, `found only ${commands.length} commands: ${commands.join(" | ")}`);
    const uncovered = commands.filter((c) => !COVERAGE.some((entry) => entry.command.test(c)));
    assert.deepEqual(uncovered, [], "README commands that no test runs: add them to COVERAGE and run them");
    for (const entry of COVERAGE.filter((e) => e.contains !== undefined)) {
      const source = await readFile(join(root, entry.by), "utf8");
      for (const fragment of entry.contains ?? []) {
        assert.ok(
          source.includes(fragment),
          `${entry.by} no longer runs ${String(entry.command)} (missing ${fragment})`,
        );
      }
    }
    console.log(`# ${commands.length} README commands:`);
    for (const c of commands) console.log(`#   ${c}   ← ${COVERAGE.find((e) => e.command.test(c))?.by ?? "?"}`);
  });

  test("make test runs the targets the README lists under Development, and .ci/run runs make test", async () => {
    const makefile = await readFile(join(root, "Makefile"), "utf8");
    // The prerequisites, then the targets its recipe runs side by side.
    const recipe = /^test: (.*?)##.*\n\t@\$\(MAKE\) [^\n]*?--output-sync=target (.*)$/m.exec(makefile);
    const prerequisites = [recipe?.[1], recipe?.[2]].join(" ").trim().split(/\s+/);
    for (const target of ["build", "lint", "test-unit", "test-integration", "test-e2e", "test-docs"]) {
      assert.ok(prerequisites.includes(target), `make test does not run ${target}: ${prerequisites.join(" ")}`);
    }
    const ci = await readFile(join(root, ".ci", "run"), "utf8");
    assert.match(ci, /^make test$/m);
  });

  test("make help lists the targets", async () => {
    const run = await sh("make help");
    assert.equal(run.code, 0, run.stderr);
    const targets = [...stripColours(run.stdout).matchAll(/^ {2}(\S+)\s{2,}\S/gm)].map((m) => m[1]);
    for (const target of ["demo", "test", "test-docs", "cluster-up", "bench", "build", "lint"]) {
      assert.ok(targets.includes(target), `${target} missing from make help: ${targets.join(" ")}`);
    }
  });

  test("make dashboard-screenshots takes both pictures the README shows (DASHBOARD_SCREENSHOTS_DIR: elsewhere)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "canaryapp-screenshots-"));
    const run = await sh("make dashboard-screenshots", { ...process.env, DASHBOARD_SCREENSHOTS_DIR: dir });
    show("make dashboard-screenshots", run.stdout);
    assert.equal(run.code, 0, run.stderr);
    for (const file of ["dashboard-overview.png", "dashboard-app.png"]) {
      assert.ok(README.includes(`](docs/${file})`), `the README shows docs/${file}`);
      for (const png of [join(dir, file), join(root, "docs", file)]) {
        const bytes = await readFile(png);
        assert.equal(bytes.subarray(1, 4).toString("latin1"), "PNG", png);
        assert.ok(bytes.length > 20_000, `${png}: ${bytes.length} bytes`);
      }
    }
  });

  test("make bench-dashboard prints its figures (20 apps, 3 rolling out, short waits)", async () => {
    const json = join(await mkdtemp(join(tmpdir(), "canaryapp-bench-dashboard-")), "dashboard.json");
    const short = {
      BENCH_DASHBOARD_APPS: "20",
      BENCH_DASHBOARD_ROLLING: "3",
      BENCH_DASHBOARD_REST_SECONDS: "3",
      BENCH_DASHBOARD_ROLL_SECONDS: "3",
      BENCH_JSON: json,
    };
    const run = await sh("make bench-dashboard", { ...process.env, ...short });
    show("make bench-dashboard (20 apps)", run.stdout);
    assert.equal(run.code, 0, run.stderr);
    for (const figure of [
      "| API requests at rest, 3 s | 0 |",
      "| RSS at rest |",
      "| page JS heap at rest (overview) |",
    ])
      assert.ok(run.stdout.includes(figure), figure);
    const written = JSON.parse(await readFile(json, "utf8")) as { apps: number; requestsAtStart: string[] };
    assert.equal(written.apps, 20);
    assert.equal(written.requestsAtStart.length, 4, "a list and a watch each of CanaryApps and Events");
  });

  test("node dist/src/main.js --help prints the flags and exits 0", async () => {
    const run = await sh("node dist/src/main.js --help");
    assert.equal(run.code, 0, run.stderr);
    for (const flag of ["--kubeconfig", "--namespaces", "--leader-elect"]) assert.ok(run.stdout.includes(flag), flag);
  });

  test("make demo: the story ends as it should, exit 0", async () => {
    const run = await sh("make demo");
    show("make demo", run.stdout + run.stderr);
    assert.equal(run.code, 0, `make demo exited ${run.code}`);
    assert.match(run.stdout, /the story ended as it should/);
    assert.match(run.stdout, /nothing is left running/);
    const verdict = verdictLines(run.stdout);
    assert.ok(verdict.length >= 5 && verdict.every((l) => l.startsWith("✔")), verdict.join("\n"));
  });

  for (const profile of ["api", "cluster"] as const) {
    test(`make cluster-up PROFILE=${profile}: prints a KUBECONFIG that works, Ctrl-C stops it`, async () => {
      // PROFILE=cluster is the default: that case runs the bare command.
      const line = profile === "cluster" ? "make cluster-up" : `make cluster-up PROFILE=${profile}`;
      assert.ok(commands.some((c) => c.startsWith("make cluster-up")));
      const up = start(line);
      const exported = await waitFor(
        "export KUBECONFIG=",
        () => Promise.resolve(/^export KUBECONFIG=(\S+)$/m.exec(up.output())?.[1]),
        { timeoutMs: 120_000, abort: () => (up.child.exitCode !== null ? `exited: ${up.output()}` : undefined) },
      );
      const kubectl = await kubectlPath();
      const run = await sh(`${kubectl} get --raw /readyz`, { ...process.env, KUBECONFIG: exported });
      assert.equal(run.stdout.trim(), "ok", run.stderr);
      await ctrlC(up.child);
      const workDir = dirname(exported);
      assert.deepEqual(await processesNaming(workDir), [], "Ctrl-C stops every component");
      assert.ok(!existsSync(workDir), "and removes the work folder");
    });
  }

  test("make chaos prints a report per run, and fails when an invariant is violated (shortened)", async () => {
    const short = {
      ...process.env,
      CHAOS_DURATION: "15",
      CHAOS_APPS: "3",
      CHAOS_RESTART_DELAYS: "0",
      CHAOS_FAILOVER: "false",
      CHAOS_APISERVER_OUTAGE: "5",
      // The upgrade run (rolling updates through share counts) is measured by `make chaos ARGS=--only=upgrade`.
      CHAOS_UPGRADE: "false",
    };
    const run = await sh("make chaos", short);
    show(
      "make chaos (shortened)",
      run.stdout
        .split("\n")
        .filter((l) => !l.startsWith("# chaos:"))
        .join("\n"),
    );
    const report = run.stdout.slice(run.stdout.lastIndexOf("chaos run: 3 apps"));
    assert.match(report, /kills \d+, failovers \d+, API-server restarts \d+/, run.stderr);
    assert.match(report, /waves [1-9]\d*, tests \d+/);
    const counts = [...report.matchAll(/^ {2}(\w+): (\d+)/gm)].map((m) => [m[1], Number(m[2])] as const);
    assert.deepEqual(
      counts.map(([name]) => name),
      [...INVARIANTS],
    );
    const violated = counts.some(([, n]) => n > 0);
    assert.equal(run.code === 0, !violated, "the exit code says whether an invariant was violated");
  });

  test("make bench prints its figures (BENCH_APPS=20 and BENCH_ROLLOUTS=1 shorten it)", async () => {
    const json = join(await mkdtemp(join(tmpdir(), "canaryapp-bench-")), "bench.json");
    const run = await sh("make bench", { ...process.env, BENCH_APPS: "20", BENCH_ROLLOUTS: "1", BENCH_JSON: json });
    show("make bench (BENCH_APPS=20, BENCH_ROLLOUTS=1)", run.stdout);
    assert.equal(run.code, 0, run.stderr);
    for (const figure of ["planner:", "rollout:", "scale: 20 apps", "| start → all children created (s) |"])
      assert.ok(run.stdout.includes(figure), figure);
    // Every printed figure is in the JSON too.
    const written = JSON.parse(await readFile(json, "utf8")) as {
      planner?: { plansPerSecond?: number };
      rollout?: { patchToSecondaryMs?: { n?: number } };
      scale?: {
        apps?: number;
        table?: Record<string, { value?: number; floor?: number; ratio?: number }>;
        restart?: { writes?: number };
      }[];
    };
    assert.ok((written.planner?.plansPerSecond ?? 0) > 0);
    assert.ok((written.rollout?.patchToSecondaryMs?.n ?? 0) > 0);
    assert.equal(written.scale?.length, 1);
    const [scale] = written.scale ?? [];
    assert.equal(scale?.apps, 20);
    const table = scale?.table ?? {};
    assert.ok((table["rssMiBAfterSettling"]?.value ?? 0) > 0 && scale?.restart?.writes !== undefined);
    // The figures with a floor carry it and the ratio to it.
    for (const figure of ["secondsToAllChildren", "writesPerNewApp", "requestsPerApp"]) {
      assert.ok((table[figure]?.floor ?? 0) > 0 && (table[figure]?.ratio ?? 0) > 0, figure);
    }
  });

  test("make bench with BENCH_ONLY=floor runs the floor under V8's defaults and under the controller's flags", async () => {
    const json = join(await mkdtemp(join(tmpdir(), "canaryapp-bench-floor-")), "floor.json");
    const run = await sh("make bench", {
      ...process.env,
      BENCH_ONLY: "floor",
      BENCH_APPS: "20",
      BENCH_FLOOR_ROUNDS: "1",
      BENCH_JSON: json,
    });
    show("make bench (BENCH_ONLY=floor, BENCH_APPS=20, BENCH_FLOOR_ROUNDS=1)", run.stdout);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(run.stdout.includes("floor under two flag sets, 20 apps, rounds: 1"), run.stdout);
    const written = JSON.parse(await readFile(json, "utf8")) as {
      scale?: unknown;
      floorFlags?: {
        apps: number;
        controllerFlags: string[];
        runs: { flags: string; nodeFlags: string[]; result: { cpuMsPerApp: number; writesPerApp: number } }[];
        medianCpuMsPerApp: { defaults: number; controller: number; ratio: number };
      }[];
    };
    assert.equal(written.scale, undefined, "only the floor ran");
    const [floor] = written.floorFlags ?? [];
    assert.equal(floor?.apps, 20);
    // Each process reported the flags it ran under: none, then the controller's own.
    assert.deepEqual(
      floor?.runs.map((r) => [r.flags, r.nodeFlags]),
      [
        ["defaults", []],
        ["controller", controllerNodeFlags()],
      ],
    );
    for (const r of floor?.runs ?? []) {
      assert.equal(r.result.writesPerApp, 7, "the floor's writes: six applies and one status write");
      assert.ok(r.result.cpuMsPerApp > 0);
    }
    assert.ok((floor?.medianCpuMsPerApp.ratio ?? 0) > 0);
  });

  /**
   * A tiny run (2 apps, 2 s interval, one rollout) of canaryapp's part, with the peers' plans from --dry-run:
   * building Flagger and Argo Rollouts takes minutes, and Flagger's own 10 s floor makes even a tiny run of it
   * about two minutes, which the tests should not spend (the full side-by-side run is `make bench-peers` itself).
   * The README's table is left alone.
   */
  test("make bench-peers measures each controller on the same work (tiny work shortens it)", async () => {
    const json = join(await mkdtemp(join(tmpdir(), "canaryapp-bench-peers-")), "peers.json");
    const small = {
      BENCH_PEERS_APPS: "2",
      BENCH_PEERS_INTERVAL: "2",
      BENCH_PEERS_ROLLOUTS: "1",
      BENCH_PEERS_REST_SECONDS: "5",
      BENCH_PEERS_JSON: json,
      BENCH_PEERS_ONLY: "canaryapp",
    };
    const run = await sh("make bench-peers", { ...process.env, ...small });
    show("make bench-peers (canaryapp's half)", run.stdout);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /\| image patch → first weight \|/);
    const written = JSON.parse(await readFile(json, "utf8")) as {
      peers: {
        label: string;
        intervalSeconds: number;
        steps: number;
        rssMiB: number;
        rollouts: { fullSeconds: number }[];
      }[];
    };
    assert.deepEqual(
      written.peers.map((p) => p.label.split(" ")[0]),
      ["canaryapp"],
    );
    for (const peer of written.peers) {
      assert.equal(peer.rollouts.length, 1);
      // No rollout is faster than its steps.
      assert.ok((peer.rollouts[0]?.fullSeconds ?? 0) >= peer.steps * peer.intervalSeconds, JSON.stringify(peer));
      assert.ok(peer.rssMiB > 0);
    }
    assert.equal(await readFile(join(root, "README.md"), "utf8"), README, "a tiny run leaves the README's table alone");
    const plan = await sh("node dist/bench/peers.js --dry-run", { ...process.env, ...small, BENCH_PEERS_ONLY: "" });
    assert.equal(plan.code, 0, plan.stderr);
    for (const kind of ['"kind": "CanaryApp"', '"kind": "Deployment"', '"kind": "Canary"', '"kind": "Rollout"'])
      assert.ok(plan.stdout.includes(kind), kind);
  });
});

describe("make demo ARGS=--keep, then the README's one-liners against the demo's app", () => {
  let demo: ReturnType<typeof start> | undefined;
  after(async () => {
    if (demo !== undefined) await ctrlC(demo.child);
  });

  test("the Using-it commands do what the README says, and Ctrl-C leaves nothing running", async () => {
    demo = start("make demo ARGS=--keep");
    await waitFor(
      "the demo keeps running",
      () => Promise.resolve(/everything keeps running/.test(demo?.output() ?? "") || undefined),
      {
        timeoutMs: 5 * 60_000,
        intervalMs: 500,
        abort: () => (demo?.child.exitCode !== null ? `the demo exited:\n${demo?.output()}` : undefined),
      },
    );
    const printed = demo.output();
    const kubeconfig = /export KUBECONFIG=(\S+)/.exec(printed)?.[1] ?? "";
    const pathLine = /export PATH=(\S+):\$PATH/.exec(printed)?.[1] ?? "";
    assert.ok(kubeconfig !== "" && pathLine !== "", "the demo prints KUBECONFIG and PATH to export");
    // A user following the README works in the app's namespace: set it as the context's default.
    const work = await mkdtemp(join(tmpdir(), "canaryapp-readme-"));
    const ownKubeconfig = join(work, "kubeconfig");
    await copyFile(kubeconfig, ownKubeconfig);
    const env = { ...process.env, KUBECONFIG: ownKubeconfig, PATH: `${pathLine}:${process.env["PATH"] ?? ""}` };
    assert.equal((await sh(`kubectl config set-context --current --namespace=${NAMESPACE}`, env)).code, 0);

    const get = async (jsonpath: string): Promise<string> =>
      (await sh(`kubectl get canaryapp ${APP} -o jsonpath='${jsonpath}'`, env)).stdout;
    const until = (what: string, ok: () => Promise<boolean>, timeoutMs = 90_000) =>
      waitFor(what, async () => ((await ok()) ? true : undefined), { timeoutMs, intervalMs: 300 });
    const image = (await get("{.spec.image}")).replace(/:[^:/]+$/, "");
    const using = (prefix: string) => {
      const line = commands.find((c) => c.startsWith(prefix));
      assert.ok(line, `the README has no command starting "${prefix}"`);
      return line;
    };
    const run = async (line: string, substitutions: Record<string, string> = {}) => {
      let text = line.replaceAll("NAME", APP);
      for (const [from, to] of Object.entries(substitutions)) text = text.replaceAll(from, to);
      const result = await sh(text, env);
      console.log(`# $ ${text}  → exit ${result.code}`);
      assert.equal(result.code, 0, `${text}: ${result.stderr}`);
      return result.stdout;
    };

    // kubectl get -w streams until stopped: run it for a few seconds.
    const watchLine = using("kubectl get canaryapp NAME -w").replaceAll("NAME", APP);
    const watched = await sh(`timeout 3 ${watchLine}; true`, env);
    assert.match(watched.stdout, /NAME\s+IMAGE\s+PHASE\s+WEIGHT\s+BATCH\s+READY\s+AGE/);
    assert.match(watched.stdout, new RegExp(`${APP}\\s+\\S+:v3\\s+Failed`));
    const described = await run(using("kubectl describe canaryapp NAME"));
    assert.match(described, /Failed Images:/);
    assert.match(described, /Events:/);

    // Pause first, then deploy v4: the test waits where it is.
    await run(using("kubectl annotate canaryapp NAME canaryapp.io/paused=true"));
    await run(using("kubectl patch canaryapp NAME"), { "repo/app:v2": `${image}:v4` });
    await until("v4 is tested but paused", async () => (await get("{.status.phase}")) === "Paused");
    await run(using("kubectl annotate canaryapp NAME canaryapp.io/paused-"));
    await until("resumed: v4 takes traffic", async () => Number(await get("{.status.weights.secondary}")) > 0);
    await run(using("kubectl annotate canaryapp NAME canaryapp.io/promote=now"));
    await until(
      "v4 promoted",
      async () => (await get("{.status.phase} {.status.primaryImage}")) === `Healthy ${image}:v4`,
    );

    // Deploy v5 and abort it: rolled back, recorded as failed; then retry it.
    await run(using("kubectl patch canaryapp NAME"), { "repo/app:v2": `${image}:v5` });
    await until("v5 is being tested", async () => (await get("{.status.phase}")) === "Progressing");
    await run(using("kubectl annotate canaryapp NAME canaryapp.io/abort=now"));
    await until("v5 aborted", async () => (await get("{.status.phase}")) === "Failed");
    assert.match(await get("{.status.failedImages[*].image} {.status.failedImages[*].reason}"), /:v5.*Aborted/);
    await run(using("kubectl annotate canaryapp NAME canaryapp.io/retry="), { "repo/app:v3": `${image}:v5` });
    await until("v5 tested again", async () => (await get("{.status.phase}")) !== "Failed");
    assert.doesNotMatch(await get("{.status.failedImages[*].image}"), /:v5/);

    // A Secret made usable as Prometheus credentials, as the Security section says.
    assert.equal((await sh(`kubectl create secret generic prom-auth --from-literal=token=t`, env)).code, 0);
    await run(using("kubectl label secret NAME canaryapp.io/credentials"), { [APP]: "prom-auth" });
    assert.equal(
      (await sh(`kubectl get secret prom-auth -o jsonpath='{.metadata.labels.canaryapp\\.io/credentials}'`, env))
        .stdout,
      "true",
    );
    // …and told where it may be sent.
    await run(using("kubectl annotate secret NAME canaryapp.io/allowed-urls"), { [APP]: "prom-auth" });
    assert.equal(
      (await sh(`kubectl get secret prom-auth -o jsonpath='{.metadata.annotations.canaryapp\\.io/allowed-urls}'`, env))
        .stdout,
      "https://prometheus.monitoring.svc:9090",
    );

    // The install line, verbatim, against the same cluster.
    const install = await run(using("kubectl kustomize config/default"));
    assert.match(install, /customresourcedefinition.apiextensions.k8s.io\/canaryapps.canaryapp.io serverside-applied/);

    await ctrlC(demo.child);
    const output = demo.output();
    show("make demo ARGS=--keep (after Ctrl-C)", output.split("\n").slice(-6).join("\n"));
    assert.match(output, /the story ended as it should/);
    assert.ok(verdictLines(output).every((l) => l.startsWith("✔")));
    assert.match(output, /nothing is left running/);
    const workDir = dirname(/controller log kept: (\S+)/.exec(output)?.[1] ?? "/nonexistent/x");
    assert.deepEqual(await processesNaming(workDir), [], "nothing the demo started is left running");
  });
});

/** The ✔/✘ lines of the demo's closing verdict. */
function verdictLines(output: string): string[] {
  const end = stripColours(output).split("── the end")[1] ?? "";
  return end
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("✔") || l.startsWith("✘"));
}

function stripColours(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}

async function kubectlPath(): Promise<string> {
  const { resolveToolchain } = await import("../../e2e/cluster/toolchain.js");
  return resolveToolchain().kubectl;
}
