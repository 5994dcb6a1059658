/**
 * What the metric sources' tests share: a local HTTP server that records each request and answers what the
 * test scripts (a vendor's documented answer), the access rules of a controller that allows every URL and
 * binds each Secret to that server, and an app.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import type { CanaryApp } from "../../api/types.js";
import type { AnalysisCheck } from "../checks.js";
import { ALLOWED_URLS_ANNOTATION, credentialRefusal, type SecretData } from "./credentials.js";
import type { SourceAccess } from "./metric-source.js";

export interface SourceRequest {
  method: string;
  /** The path with its query string. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface SourceReply {
  status?: number;
  headers?: Record<string, string>;
  /** JSON-encoded unless a string. */
  body: unknown;
}

export interface FakeSource {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: SourceRequest[];
  close(): Promise<void>;
}

export async function startFakeSource(answer: (request: SourceRequest, n: number) => SourceReply): Promise<FakeSource> {
  const requests: SourceRequest[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const request = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      requests.push(request);
      const reply = answer(request, requests.length);
      const text = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
      res.writeHead(reply.status ?? 200, { "Content-Type": "application/json", ...reply.headers });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A credentials Secret as the label-filtered reader returns it: base64 values, its allowed URLs. */
export function secretFor(values: Record<string, string>, allowedUrls?: string): SecretData {
  return {
    data: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
    ...(allowedUrls !== undefined && { metadata: { annotations: { [ALLOWED_URLS_ANNOTATION]: allowedUrls } } }),
  };
}

/**
 * Access rules over `secrets` (namespace/name → Secret; an absent one reads as not usable), plain http
 * allowed for credentials, every URL allowed unless `refuseUrl` says otherwise; no retry waits.
 */
export function accessOver(secrets: Record<string, SecretData>, options: Partial<SourceAccess> = {}): SourceAccess {
  return {
    refuseUrl: () => Promise.resolve(undefined),
    readSecret: (namespace, name) => Promise.resolve(secrets[`${namespace}/${name}`] ?? null),
    credentialsMayGo: ({ name, namespace, allowedUrls }, url) =>
      credentialRefusal({ secret: { name, namespace }, allowedUrls, allowPlainHttp: true }, url, `URL ${url}`),
    retries: 0,
    now: () => new Date("2026-05-01T12:00:00Z"),
    ...options,
  };
}

export const app: CanaryApp = {
  apiVersion: "canaryapp.io/v1alpha1",
  kind: "CanaryApp",
  metadata: { name: "shop", namespace: "team-a" },
  spec: { image: "shop:2" },
} as CanaryApp;

/** A threshold check with a query and a provider; `range` makes it a judged one. */
export function checkOf(
  query: string,
  provider: AnalysisCheck["provider"],
  range?: AnalysisCheck["range"],
): AnalysisCheck {
  return {
    name: "m",
    mode: range ? "judge" : "threshold",
    query,
    window: "5m",
    ...(provider !== undefined && { provider }),
    ...(range !== undefined && { range }),
  };
}
