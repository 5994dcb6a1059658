/**
 * Headers the simulated callers put on some of their requests, so that routes matching on a header or a
 * cookie are exercised: `x-canary=always:0.25` sends `x-canary: always` on a quarter of the requests; a
 * cookie `canary=always:0.1` adds `canary=always` to the `cookie` header of a tenth. Each is drawn on its
 * own for every request. Pure, given the random source.
 */
import type { Random } from "./prng.js";

export interface HeaderSpec {
  /** A header of its own, or a cookie in the `cookie` header. */
  kind: "header" | "cookie";
  /** A header's name in lower case, or a cookie's name as written. */
  name: string;
  value: string;
  /** The fraction of requests that carry it, 0..1. */
  fraction: number;
}

/**
 * Reads `NAME=VALUE[:FRACTION]` (FRACTION 0..1, default 1: every request). The value may itself contain `=`
 * or `:`; a last `:` is taken as the fraction only when what follows is a number.
 */
export function parseHeaderSpec(text: string, kind: HeaderSpec["kind"]): HeaderSpec {
  const eq = text.indexOf("=");
  if (eq <= 0) throw new Error(`expected NAME=VALUE[:FRACTION], got ${JSON.stringify(text)}`);
  const name = text.slice(0, eq).trim();
  let value = text.slice(eq + 1);
  let fraction = 1;
  const colon = value.lastIndexOf(":");
  if (colon >= 0) {
    const tail = value.slice(colon + 1).trim();
    const n = Number(tail);
    if (tail !== "" && Number.isFinite(n)) {
      if (n < 0 || n > 1) throw new Error(`${JSON.stringify(text)}: the fraction must be from 0 to 1, got ${tail}`);
      fraction = n;
      value = value.slice(0, colon);
    }
  }
  if (kind === "header" && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
    throw new Error(`${JSON.stringify(text)}: ${JSON.stringify(name)} is not a header name`);
  }
  if (kind === "cookie" && (name === "" || /[;,=\s]/.test(name))) {
    throw new Error(`${JSON.stringify(text)}: ${JSON.stringify(name)} is not a cookie name`);
  }
  return { kind, name: kind === "header" ? name.toLowerCase() : name, value, fraction };
}

/**
 * The headers of one request: each spec drawn with its fraction (one random draw per spec, none at all
 * without specs). Cookies are joined into one `cookie` header by `; ` in the order given, after a `cookie`
 * header given as such.
 */
export function drawHeaders(specs: readonly HeaderSpec[], random: Random): Record<string, string> {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const spec of specs) {
    if (!(random() < spec.fraction)) continue;
    if (spec.kind === "header") headers[spec.name] = spec.value;
    else cookies.push(`${spec.name}=${spec.value}`);
  }
  if (cookies.length > 0) {
    headers["cookie"] = [...(headers["cookie"] !== undefined ? [headers["cookie"]] : []), ...cookies].join("; ");
  }
  return headers;
}
