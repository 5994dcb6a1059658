import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Agent, request } from "node:https";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

/** What one request asked: `watch`, `list` and `get` are GETs; the others are named by their method. */
export type Verb = "get" | "list" | "watch" | "create" | "update" | "patch" | "delete" | "deletecollection";

/** One request a controller sent through the proxy. */
export interface CountedRequest {
  /** When it arrived (Date.now()). */
  at: number;
  verb: Verb;
  /** The resource's plural (`deployments`, `canaries`, `events`), with `/subresource` when one was named. */
  resource: string;
  /** The object's name: from the path, or from the body of a create; undefined for collections. */
  name: string | undefined;
}

/**
 * An HTTP proxy in front of the API server, for one controller at a time: the controller talks plain HTTP
 * to the proxy (the kubeconfig it writes), the proxy forwards each request over TLS with the admin
 * credentials and records it. The API server's own metrics do not say which client sent a request; a proxy
 * that only one controller uses does.
 */
export interface CountingProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** A kubeconfig that reaches the API server through the proxy. */
  readonly kubeconfigPath: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly CountedRequest[];
  stop(): Promise<void>;
}

/**
 * The verb, resource and name of an API path (`/api/v1/namespaces/ns/pods/x`, `/apis/g/v/…`); undefined for
 * paths that are not resources (`/version`, `/apis`, discovery).
 */
export function classify(method: string, url: string, body?: unknown): Omit<CountedRequest, "at"> | undefined {
  const parsed = new URL(url, "http://proxy");
  const parts = parsed.pathname.split("/").filter((p) => p !== "");
  const prefix = parts[0] === "api" ? 2 : parts[0] === "apis" ? 3 : undefined;
  let rest = prefix === undefined || parts.length <= prefix ? [] : parts.slice(prefix);
  // `namespaces/<ns>/<resource>…` is a namespaced resource; `namespaces/<ns>` is the Namespace itself.
  if (rest[0] === "namespaces" && rest.length >= 3) rest = rest.slice(2);
  const [resource, name, sub] = rest;
  if (resource === undefined) return undefined;
  const watch = ["true", "1"].includes(parsed.searchParams.get("watch") ?? "");
  const collection = name === undefined;
  const verb: Verb = (() => {
    switch (method) {
      case "GET":
        return watch ? "watch" : collection ? "list" : "get";
      case "POST":
        return "create";
      case "PUT":
        return "update";
      case "PATCH":
        return "patch";
      default:
        return collection ? "deletecollection" : "delete";
    }
  })();
  return {
    verb,
    resource: sub === undefined ? resource : `${resource}/${sub}`,
    name: name ?? (verb === "create" ? createdName(body) : undefined),
  };
}

/** The name of an object being created; for an Event, the name of the object it is about. */
function createdName(body: unknown): string | undefined {
  const o = body as
    { metadata?: { name?: string }; involvedObject?: { name?: string }; regarding?: { name?: string } } | undefined;
  return o?.involvedObject?.name ?? o?.regarding?.name ?? o?.metadata?.name;
}

/**
 * The app of `apps` an object name belongs to: the app's own name, or one of its children (`<app>-primary`,
 * `<app>-canary`) or Events (`<app>.<suffix>`, `<app>-primary.<suffix>`).
 */
export function appOf(name: string | undefined, apps: readonly string[]): string | undefined {
  if (name === undefined) return undefined;
  return apps.find((app) => name === app || name.startsWith(`${app}-`) || name.startsWith(`${app}.`));
}

/** Starts a proxy to the API server of `adminKubeconfig` and writes a kubeconfig for it at `kubeconfigPath`. */
export async function startCountingProxy(adminKubeconfig: string, kubeconfigPath: string): Promise<CountingProxy> {
  const kc = new KubeConfig();
  kc.loadFromFile(adminKubeconfig);
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  // Embedded (base64) or in files, as a kubeconfig may have them.
  const material = (data: string | undefined, file: string | undefined) =>
    data !== undefined ? Buffer.from(data, "base64") : file !== undefined ? readFileSync(file) : undefined;
  const ca = material(cluster?.caData, cluster?.caFile);
  const cert = material(user?.certData, user?.certFile);
  const key = material(user?.keyData, user?.keyFile);
  if (cluster === null || ca === undefined || cert === undefined || key === undefined) {
    throw new Error(`${adminKubeconfig}: expected a cluster CA and a client certificate and key`);
  }
  const upstream = new URL(cluster.server);
  const agent = new Agent({ keepAlive: true, ca, cert, key });
  const requests: CountedRequest[] = [];
  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const at = Date.now();
    let parsed: unknown;
    if (req.method === "POST" && body.length > 0) {
      try {
        parsed = JSON.parse(body.toString("utf8"));
      } catch {
        parsed = undefined;
      }
    }
    const counted = classify(req.method ?? "GET", req.url ?? "/", parsed);
    if (counted !== undefined) requests.push({ at, ...counted });
    const headers = { ...req.headers, host: upstream.host };
    delete headers["connection"];
    const out = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: body.length > 0 ? { ...headers, "content-length": String(body.length) } : headers,
        agent,
      },
      (upstreamRes) => {
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
        // A watch's headers come long before its first event; its client waits for them.
        res.flushHeaders();
        upstreamRes.pipe(res);
      },
    );
    out.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`proxy: ${err.message}`);
    });
    // A watch ends when its client goes away.
    res.on("close", () => out.destroy());
    out.end(body);
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => forward(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await writeFile(
    kubeconfigPath,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      // client-node refuses plain http unless told that no certificate is checked (none is offered).
      clusters: [{ name: "proxy", cluster: { server: url, "insecure-skip-tls-verify": true } }],
      users: [{ name: "proxy", user: {} }],
      contexts: [{ name: "proxy", context: { cluster: "proxy", user: "proxy" } }],
      "current-context": "proxy",
    }),
  );
  return {
    url,
    kubeconfigPath,
    requests,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
