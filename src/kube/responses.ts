/**
 * Reading the API server's answers: a body inflated when the server compressed it, as text, and a failed
 * request's Status as a KubeApiError.
 */
import type { IncomingMessage } from "node:http";
import { pipeline, type Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { Coalesce } from "./coalesce.js";
import { KubeApiError } from "./errors.js";

// Taken as a CommonJS object, not imported: an ES `import` of node:http reads every export of it, and its lazy
// `WebSocket` export loads Node's bundled undici (about 12 MiB of RSS the controller never uses, ADR 0017).
const { STATUS_CODES } = process.getBuiltinModule("node:http");

/** The API server's answer to a failed request as an error: the Status' message, code and reason. */
export function apiError(
  method: string,
  path: string,
  code: number,
  text: string,
  retryAfter: string | undefined,
): KubeApiError {
  let reason = "";
  let message = "";
  let body: Record<string, unknown> | undefined;
  try {
    const status = JSON.parse(text) as Record<string, unknown> | null;
    if (status !== null && typeof status === "object") body = status;
    if (typeof status?.["reason"] === "string") reason = status["reason"];
    if (typeof status?.["message"] === "string") message = status["message"];
  } catch {
    message = text.slice(0, 200);
  }
  const detail = message !== "" ? message : `${method} ${path}: ${STATUS_CODES[code] ?? "failed"}`;
  return new KubeApiError(`${detail} (HTTP ${code})`, code, reason, {
    ...(retryAfter !== undefined && { headers: { "retry-after": retryAfter } }),
    ...(body !== undefined && { body }),
  });
}

/**
 * The body of `response`, inflated when the server compressed it. A connection that drops, or a compressed body
 * cut short, ends the stream with an error.
 */
export function decoded(response: IncomingMessage): Readable {
  if (response.headers["content-encoding"] !== "gzip") return response;
  // Inflated in pieces, not per read: the API server sends a compressed list in reads of about 1.4 KB.
  return pipeline(
    response,
    new Coalesce(INFLATE_IN_BYTES),
    createGunzip({ chunkSize: INFLATE_OUT_BYTES }),
    () => undefined,
  );
}

/** How much of a compressed answer is inflated at once (src/kube/coalesce.ts). */
const INFLATE_IN_BYTES = 64 * 1024;
/** The size of an inflated piece: a 64 KB compressed piece of a list inflates to 0.6–1 MB. */
const INFLATE_OUT_BYTES = 256 * 1024;

/** The body of `response` as text, inflated when the server compressed it. */
export async function readText(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of decoded(response)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
