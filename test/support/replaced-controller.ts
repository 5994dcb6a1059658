import assert from "node:assert/strict";
import { spawnController, type ControllerProcess } from "./process.js";

/**
 * The controller of one test namespace, as a process a test SIGKILLs and replaces as often as it likes (the
 * restart tests): each process is numbered in its identity, and all of them are stopped at the end.
 */
export class ReplacedController {
  /** Every process started, the killed ones included. */
  readonly processes: ControllerProcess[] = [];
  /** SIGKILLs so far. */
  kills = 0;
  #current: ControllerProcess | undefined;

  /** `name` names the processes; `namespace` is read when a process starts. */
  constructor(
    private readonly name: string,
    private readonly namespace: () => string,
  ) {}

  /** The process running now. */
  get current(): ControllerProcess {
    if (this.#current === undefined) throw new Error(`${this.name}: no controller started`);
    return this.#current;
  }

  /** Starts a controller for the namespace, without leader election. */
  start(): ControllerProcess {
    const started = spawnController(
      [`--kubeconfig=${process.env["KUBECONFIG"]}`, `--namespaces=${this.namespace()}`, "--leader-elect=false"],
      `${this.name}-controller-${this.processes.length + 1}`,
    );
    this.processes.push(started);
    this.#current = started;
    return started;
  }

  /** SIGKILLs the running controller and starts another; resolves with the time the kill was sent. */
  async killAndReplace(where?: string): Promise<number> {
    const killedAt = Date.now();
    const code = await this.current.kill("SIGKILL");
    assert.equal(code, null, `the controller died of the signal${where === undefined ? "" : ` (${where})`}`);
    this.kills++;
    this.start();
    return killedAt;
  }

  /** Stops every process still running. */
  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.kill("SIGTERM")));
  }
}
