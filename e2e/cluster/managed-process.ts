import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";

// setpriv (util-linux) makes the kernel kill the component when this Node process dies, even by SIGKILL,
// where no exit handler of ours can run.
const SETPRIV = "/usr/bin/setpriv";
const parentDeathSignal = process.platform === "linux" && existsSync(SETPRIV);

/** How a process ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * One long-running control-plane binary whose stdout and stderr go to a log file.
 * It stays in our process group, so a Ctrl-C in the terminal reaches it even if our own handlers never run.
 */
export class ManagedProcess {
  readonly exited: Promise<ExitStatus>;
  private readonly child: ChildProcess;
  private status: ExitStatus | undefined;

  constructor(
    readonly name: string,
    binary: string,
    args: readonly string[],
    readonly logPath: string,
  ) {
    const fd = openSync(logPath, "a");
    try {
      this.child = parentDeathSignal
        ? spawn(SETPRIV, ["--pdeathsig", "KILL", "--", binary, ...args], { stdio: ["ignore", fd, fd] })
        : spawn(binary, args, { stdio: ["ignore", fd, fd] });
    } finally {
      closeSync(fd);
    }
    this.exited = new Promise<ExitStatus>((resolve) => {
      // 'error' fires instead of 'exit' when the binary cannot be started at all.
      this.child.once("error", () => {
        this.status ??= { code: 127, signal: null };
        resolve(this.status);
      });
      this.child.once("exit", (code, signal) => {
        this.status = { code, signal };
        resolve(this.status);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Set once the process has ended. */
  get exitStatus(): ExitStatus | undefined {
    return this.status;
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it has exited. */
  async stop(graceMs: number): Promise<void> {
    if (this.status) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Synchronous last resort for process 'exit' handlers, where nothing can be awaited. */
  killNow(): void {
    if (!this.status) this.child.kill("SIGKILL");
  }

  /** The last lines of the log, for error messages. */
  logTail(lines = 25): string {
    try {
      return readFileSync(this.logPath, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }

  /** Describes how it ended, with the tail of its log, for startup failures. */
  describeExit(): string {
    const s = this.status;
    const how = s ? (s.signal ? `was killed by ${s.signal}` : `exited with code ${s.code}`) : "is still running";
    return `${this.name} ${how}; log: ${this.logPath}\n${this.logTail()}`;
  }
}
