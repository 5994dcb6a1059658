#!/usr/bin/env node
/**
 * `kubectl canaryapp`: the kubectl plugin for CanaryApps. kubectl finds it as the executable
 * `kubectl-canaryapp` on PATH (bin/kubectl-canaryapp, or npm's link of this file) and passes it every
 * argument after `canaryapp`.
 */
import { run } from "./program.js";

const code = await run(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  isTTY: process.stdout.isTTY,
});
// Open watches and pooled connections would keep the process alive: a verb is done when it returns.
process.exit(code);
