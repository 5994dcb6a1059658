/**
 * How the simulated pods of an image answer. The simulator has no real pods (kwok fakes them), so an
 * image's behaviour is declared: a fraction of requests answered 500, and a latency of base + jitter.
 */
import { readFile } from "node:fs/promises";

export interface Behaviour {
  /** Fraction of requests answered 500, 0..1. */
  errorRate: number;
  /** The fastest answer, in milliseconds. */
  latencyMs: number;
  /** Up to this many milliseconds are added at random to each answer. */
  jitterMs: number;
}

/** Behaviours by image: an entry matches an image equal to its key or ending with it (`":v3"`). */
export interface BehaviourTable {
  images: Record<string, Behaviour>;
  default: Behaviour;
}

const HEALTHY: Behaviour = { errorRate: 0, latencyMs: 10, jitterMs: 20 };

/**
 * Every image answers in 10–30 ms, except a `v3` tag, which fails every request, as the original
 * go-status-code-server's bad release did.
 */
export const DEFAULT_BEHAVIOURS: BehaviourTable = {
  images: { ":v3": { ...HEALTHY, errorRate: 1 } },
  default: HEALTHY,
};

/** The behaviour of `image`: an exact key first, else the longest key the image ends with, else the default. */
export function behaviourFor(image: string, table: BehaviourTable): Behaviour {
  const exact = table.images[image];
  if (exact) return exact;
  let best: { key: string; behaviour: Behaviour } | undefined;
  for (const [key, behaviour] of Object.entries(table.images)) {
    if (key !== "" && image.endsWith(key) && (!best || key.length > best.key.length)) best = { key, behaviour };
  }
  return best?.behaviour ?? table.default;
}

function parseBehaviour(value: unknown, where: string, base: Behaviour): Behaviour {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`${where}: expected an object with errorRate, latencyMs, jitterMs`);
  }
  const v = value as Record<string, unknown>;
  const known = new Set(["errorRate", "latencyMs", "jitterMs"]);
  const unknown = Object.keys(v).filter((k) => !known.has(k));
  if (unknown.length > 0) throw new Error(`${where}: unknown field(s) ${unknown.join(", ")}`);
  const number = (key: keyof Behaviour, min: number, max: number): number => {
    const x = v[key] ?? base[key];
    if (typeof x !== "number" || !Number.isFinite(x) || x < min || x > max) {
      throw new Error(`${where}.${key}: expected a number from ${min} to ${max}, got ${JSON.stringify(x)}`);
    }
    return x;
  };
  return {
    errorRate: number("errorRate", 0, 1),
    latencyMs: number("latencyMs", 0, 3_600_000),
    jitterMs: number("jitterMs", 0, 3_600_000),
  };
}

/**
 * Validates a behaviour table, e.g. `{ "images": { ":v2": { "errorRate": 0.1 } }, "default": { "latencyMs": 5 } }`.
 * Missing fields take the healthy defaults; the built-in `:v3` entry applies unless the table names `:v3`
 * itself, so a file only lists what it changes.
 */
export function parseBehaviourTable(value: unknown, where = "behaviour"): BehaviourTable {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error(`${where}: expected an object`);
  const v = value as Record<string, unknown>;
  const unknown = Object.keys(v).filter((k) => k !== "images" && k !== "default");
  if (unknown.length > 0) throw new Error(`${where}: unknown field(s) ${unknown.join(", ")}`);
  const fallback = v.default === undefined ? HEALTHY : parseBehaviour(v.default, `${where}.default`, HEALTHY);
  const images: Record<string, Behaviour> = { ...DEFAULT_BEHAVIOURS.images };
  if (v.images !== undefined) {
    if (typeof v.images !== "object" || v.images === null || Array.isArray(v.images)) {
      throw new Error(`${where}.images: expected an object keyed by image or image suffix`);
    }
    for (const [key, b] of Object.entries(v.images)) {
      if (key === "") throw new Error(`${where}.images: an empty key would match every image; use "default"`);
      images[key] = parseBehaviour(b, `${where}.images["${key}"]`, fallback);
    }
  }
  return { images, default: fallback };
}

/** Reads and validates a behaviour file (JSON); errors name the file. */
export async function loadBehaviourFile(path: string): Promise<BehaviourTable> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    throw new Error(`behaviour file ${path}: ${(err as Error).message}`, { cause: err });
  }
  return parseBehaviourTable(parsed, `behaviour file ${path}`);
}
