#!/usr/bin/env node
/**
 * `kubectl canaryapp`: the kubectl plugin for CanaryApps. kubectl finds it as the executable
 * `kubectl-canaryapp` on PATH (bin/kubectl-canaryapp, or npm's link of this file) and passes it every
 * argument after `canaryapp`.
 */
import { nodeVersionProblem } from "./node-version.js";

// Before the program is imported: what it imports needs a recent Node, and an old one would fail there.
const problem = nodeVersionProblem(process.versions.node);
if (problem !== undefined) {
  process.stderr.write(`error: ${problem}\n`);
  process.exit(1);
}

const { run } = await import("./program.js");
const code = await run(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  isTTY: process.stdout.isTTY,
});
// Open watches and pooled connections would keep the process alive: a verb is done when it returns.
process.exit(code);
