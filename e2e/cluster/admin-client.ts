import { readFileSync } from "node:fs";
import { request } from "node:https";

/** A response of the API server: status code and the parsed JSON body (undefined when empty or not JSON). */
export interface RawResponse {
  status: number;
  body: unknown;
  text: string;
}

/**
 * A minimal HTTPS client for the API server that authenticates with the admin client certificate. The harness
 * talks raw REST so that what it sends (CRDs with `x-kubernetes-*` keys, for instance) is exactly the manifest,
 * with no model serializer in between.
 */
export class AdminClient {
  private readonly ca: Buffer;
  private readonly cert: Buffer;
  private readonly key: Buffer;

  constructor(
    readonly server: string,
    files: { caCert: string; adminCert: string; adminKey: string },
  ) {
    this.ca = readFileSync(files.caCert);
    this.cert = readFileSync(files.adminCert);
    this.key = readFileSync(files.adminKey);
  }

  /** Sends one request; resolves with any status code, rejects only on transport errors. */
  send(method: string, path: string, body?: unknown, timeoutMs = 10_000): Promise<RawResponse> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<RawResponse>((resolve, reject) => {
      const req = request(
        new URL(path, this.server),
        {
          method,
          ca: this.ca,
          cert: this.cert,
          key: this.key,
          timeout: timeoutMs,
          headers: payload === undefined ? {} : { "content-type": "application/json" },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed, text });
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${path}: timed out after ${timeoutMs}ms`)));
      req.on("error", reject);
      req.end(payload);
    });
  }

  /** Like {@link send}, but a status outside `ok` (default 2xx) is an error naming the request. */
  async expect(method: string, path: string, body?: unknown, ok: readonly number[] = []): Promise<RawResponse> {
    const res = await this.send(method, path, body);
    if ((res.status >= 200 && res.status < 300) || ok.includes(res.status)) return res;
    throw new Error(`${method} ${path}: HTTP ${res.status}: ${res.text.slice(0, 500)}`);
  }
}
