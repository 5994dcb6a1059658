/**
 * The kubectl built by `make toolchain`, run as a person would run it: the story prints each command in the
 * form a reader can paste (`kubectl ...`, with KUBECONFIG exported) and runs exactly those arguments.
 */
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { dirname } from "node:path";
import { PrerequisiteError, resolveToolchain } from "../cluster/toolchain.js";

/** A kubectl command that exited with an error: its arguments, exit code and stderr. */
export class KubectlError extends Error {
  override name = "KubectlError";
  constructor(
    readonly command: string,
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(`${command}: exit ${code ?? "by signal"}: ${stderr.trim()}`);
  }
}

/** Characters that need no quoting in a POSIX shell word. */
const SHELL_SAFE = /^[A-Za-z0-9_./:=@%+,-]+$/;

/** Quotes one word for a POSIX shell (single quotes, with embedded ones escaped). */
export function shellQuote(word: string): string {
  if (word !== "" && SHELL_SAFE.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** How a command reads when typed into a shell. */
export function displayCommand(program: string, args: readonly string[]): string {
  return [program, ...args].map(shellQuote).join(" ");
}

/** Locates the kubectl of the pinned toolchain; a PrerequisiteError names `make toolchain` when it is missing. */
export function toolchainKubectl(): string {
  const { kubectl } = resolveToolchain();
  try {
    accessSync(kubectl, constants.X_OK);
  } catch {
    throw new PrerequisiteError(`${kubectl} is missing: run \`make toolchain\` to build it`);
  }
  return kubectl;
}

export class Kubectl {
  constructor(
    /** Absolute path of the binary. */
    readonly binary: string,
    readonly kubeconfig: string,
  ) {}

  /** The environment a shell needs to run the printed commands: this kubectl first on PATH, and KUBECONFIG. */
  env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      KUBECONFIG: this.kubeconfig,
      PATH: `${dirname(this.binary)}:${process.env["PATH"] ?? ""}`,
    };
  }

  /** `kubectl <args>` as a person types it. */
  display(args: readonly string[]): string {
    return displayCommand("kubectl", args);
  }

  /** Runs kubectl with `args` (and `input` on stdin); resolves with stdout, rejects with a KubectlError. */
  run(args: readonly string[], input?: string): Promise<string> {
    return runProcess(this.binary, args, this.env(), input, this.display(args));
  }

  /**
   * Runs a shell pipeline with this kubectl as `kubectl` (bash, `set -euo pipefail`), for commands that
   * a README gives as a pipeline, e.g. `kubectl kustomize config/default | kubectl apply --server-side -f -`.
   */
  shell(script: string, cwd?: string): Promise<string> {
    return runProcess("bash", ["-c", `set -euo pipefail\n${script}`], this.env(), undefined, script, cwd);
  }
}

function runProcess(
  binary: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  input: string | undefined,
  shown: string,
  cwd?: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.once("error", (error) => reject(new Error(`${shown}: cannot start ${binary}`, { cause: error })));
    child.once("close", (code) => {
      const stdout = Buffer.concat(out).toString("utf8");
      if (code === 0) resolve(stdout);
      else reject(new KubectlError(shown, code, Buffer.concat(err).toString("utf8") || stdout));
    });
    child.stdin.end(input ?? "");
  });
}
