import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { findRepoRoot, resolveToolchain } from "../../e2e/cluster/toolchain.js";
import { testKubeConfigPath } from "./kube.js";

/** What one kubectl run returned. */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * The real kubectl of the toolchain, with `pluginDir` first on PATH so that kubectl discovers
 * `kubectl-canaryapp` there, and this process's Node next (the plugin's shim runs `node`). It runs in the
 * repository root, so that paths read as the README writes them.
 */
export class Kubectl {
  readonly binary: string;
  readonly env: NodeJS.ProcessEnv;

  constructor(
    readonly pluginDir: string,
    env: NodeJS.ProcessEnv = {},
  ) {
    this.binary = resolveToolchain().kubectl;
    this.env = {
      ...process.env,
      KUBECONFIG: testKubeConfigPath(),
      ...env,
      PATH: [pluginDir, dirname(process.execPath), dirname(this.binary), process.env["PATH"] ?? ""].join(":"),
    };
  }

  run(args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<KubectlResult> {
    const started = Date.now();
    return new Promise((resolve) => {
      execFile(
        this.binary,
        args,
        {
          cwd: findRepoRoot(),
          env: { ...this.env, ...options.env },
          timeout: options.timeoutMs ?? 60_000,
          encoding: "utf8",
        },
        (error, stdout, stderr) => {
          const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
          resolve({ code, stdout, stderr, ms: Date.now() - started });
        },
      );
    });
  }

  /** Starts kubectl and keeps it running; its output accumulates in `output()`. */
  spawn(args: string[]): RunningKubectl {
    const child = spawn(this.binary, args, { cwd: findRepoRoot(), env: this.env, stdio: ["ignore", "pipe", "pipe"] });
    return new RunningKubectl(child);
  }
}

/** A kubectl process that runs until it exits or is stopped. */
export class RunningKubectl {
  stdout = "";
  stderr = "";
  readonly exited: Promise<{ code: number | null; at: number }>;
  private readonly listeners = new Set<() => void>();

  constructor(readonly child: ChildProcess) {
    child.stdout?.on("data", (chunk: Buffer) => {
      this.stdout += chunk.toString("utf8");
      for (const listener of this.listeners) listener();
    });
    child.stderr?.on("data", (chunk: Buffer) => (this.stderr += chunk.toString("utf8")));
    this.exited = new Promise((resolve) => child.on("exit", (code) => resolve({ code, at: Date.now() })));
  }

  /** Resolves with the time the output first matched `pattern` (after `from` characters). */
  until(pattern: RegExp, from = 0, timeoutMs = 20_000): Promise<number> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!pattern.test(this.stdout.slice(from))) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve(Date.now());
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`no ${String(pattern)} in the output after ${timeoutMs} ms:\n${this.stdout}\n${this.stderr}`));
      }, timeoutMs);
      this.listeners.add(check);
      check();
    });
  }

  async stop(): Promise<void> {
    this.child.kill("SIGINT");
    await this.exited;
  }
}

/** The plugin's shim in this checkout. */
export const PLUGIN_SHIM = join(findRepoRoot(), "bin", "kubectl-canaryapp");

/** A fresh folder holding a link to the plugin, as `make install-plugin PREFIX=...` makes in PREFIX/bin. */
export function linkPlugin(): string {
  const dir = mkdtempSync(join(tmpdir(), "kubectl-plugin-"));
  symlinkSync(PLUGIN_SHIM, join(dir, "kubectl-canaryapp"));
  return dir;
}
