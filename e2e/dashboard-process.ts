/**
 * `kubectl canaryapp dashboard` as a user runs it (the plugin's compiled entry, with a kubeconfig), and a
 * headless Chromium to look at its page: Debian's `chromium` package, driven by playwright-core
 * (`make chromium` installs the package when it is missing; `make test-e2e` and `make dashboard-screenshots`
 * run it).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";

const PLUGIN = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));
/** Where Debian's chromium package puts the browser; CHROMIUM names another. */
export const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";

export interface RunningDashboard {
  url: string;
  pid: number;
  process: ChildProcess;
  /** What it printed on stderr. */
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * Starts the dashboard on a free loopback port; resolves with the URL it prints. `nodeArgs` go to node before the
 * plugin (e.g. a `--import` that counts its requests, bench/dashboard.ts).
 */
export function startDashboardProcess(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  nodeArgs: string[] = [],
): Promise<RunningDashboard> {
  const child = spawn(process.execPath, [...nodeArgs, PLUGIN, "dashboard", "--address", "127.0.0.1:0", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`the dashboard printed no URL in 20 s: ${stderr}`)), 20_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(error);
    };
    child.on("exit", (code) => fail(new Error(`the dashboard exited (${code}) before it listened: ${stderr}`)));
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const url = /(http:\/\/\S+)/.exec(stdout)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      resolve({
        url,
        pid: child.pid ?? 0,
        process: child,
        stderr: () => stderr,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            child.once("exit", () => done());
            child.kill("SIGTERM");
          }),
      });
    });
  });
}

/** Headless Chromium from the system's package. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} not found: run \`make chromium\` (installs Debian's chromium package) or set CHROMIUM`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
}
