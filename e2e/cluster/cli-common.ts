import { pino, type Logger } from "pino";
import type { Profile } from "./control-plane.js";
import { PrerequisiteError } from "./toolchain.js";

/** The CLIs log to stderr so that stdout stays for what a caller may capture (`export KUBECONFIG=...`). */
export function cliLogger(): Logger {
  return pino({ level: process.env["LOG_LEVEL"] ?? "info", base: undefined }, pino.destination(2));
}

/** Validates a --profile value. */
export function parseProfile(value: string | undefined): Profile {
  if (value === "api" || value === "cluster") return value;
  throw new UsageError(`--profile must be "api" or "cluster", got ${JSON.stringify(value ?? "")}`);
}

/** Wrong command line. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Prints a failure for a person: one line for a missing prerequisite, the chain of causes otherwise. */
export function reportFailure(err: unknown): void {
  if (err instanceof PrerequisiteError || err instanceof UsageError) {
    process.stderr.write(`${err.message}\n`);
    return;
  }
  const lines: string[] = [];
  for (let e: unknown = err; e !== undefined; e = e instanceof Error ? e.cause : undefined) {
    const message = e instanceof Error ? e.message : typeof e === "string" ? e : JSON.stringify(e);
    // Wrapping errors often repeat their cause's message; print each piece once.
    if (!lines.some((l) => l.includes(message))) lines.push(lines.length === 0 ? message : `caused by: ${message}`);
  }
  process.stderr.write(`${lines.join("\n")}\n`);
}
