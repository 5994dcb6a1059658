import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { PooledKubeConfig } from "./connections.js";
import { KubeRest, type KubeRestOptions } from "./rest.js";

/** One request the fake API server received. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string;
  body: unknown;
}

export interface FakeResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Answers a request; return undefined to fall through to discovery or a 404 Status. */
export type FakeHandler = (req: RecordedRequest) => FakeResponse | undefined;

const RESOURCES: Record<string, { name: string; kind: string; namespaced: boolean }[]> = {
  "/api/v1": [
    { name: "services", kind: "Service", namespaced: true },
    { name: "events", kind: "Event", namespaced: true },
  ],
  "/apis/apps/v1": [{ name: "deployments", kind: "Deployment", namespaced: true }],
  "/apis/canaryapp.io/v1alpha1": [{ name: "canaryapps", kind: "CanaryApp", namespaced: true }],
  "/apis/networking.istio.io/v1": [
    { name: "virtualservices", kind: "VirtualService", namespaced: true },
    { name: "destinationrules", kind: "DestinationRule", namespaced: true },
  ],
};

/** A Kubernetes Status body, as the API server sends with errors. */
export function status(code: number, reason: string, message: string): FakeResponse {
  return { status: code, body: { kind: "Status", apiVersion: "v1", status: "Failure", reason, message, code } };
}

/**
 * A tiny HTTP server that records requests and answers them with a handler, plus discovery for the kinds
 * the controller uses. It lets tests see exactly what the real client puts on the wire (method, path,
 * query, content type, body).
 */
export class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  handler: FakeHandler = () => undefined;
  private server: Server | undefined;
  /** The server's URL once started. */
  url = "";

  async start(): Promise<PooledKubeConfig> {
    this.server = createServer((req, res) => {
      void this.answer(req).then(({ status: code, body, headers }) => {
        res.writeHead(code, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    const kc = new PooledKubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "fake", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: "fake", token: "t" }],
      contexts: [{ name: "fake", cluster: "fake", user: "fake", namespace: "default" }],
      currentContext: "fake",
    });
    return kc;
  }

  /** The controller's REST client for this server, authenticated by the bearer token "t". */
  rest(options: KubeRestOptions = {}): KubeRest {
    return new KubeRest(
      {
        server: this.url,
        tls: { rejectUnauthorized: true },
        authenticate: () => Promise.resolve({ authorization: "Bearer t" }),
        source: "kubeconfig",
      },
      options,
    );
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Requests other than discovery. */
  calls(): RecordedRequest[] {
    return this.requests.filter((r) => !(r.path in RESOURCES));
  }

  private async answer(req: IncomingMessage): Promise<FakeResponse> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://fake");
    const recorded: RecordedRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      contentType: req.headers["content-type"] ?? "",
      body: text === "" ? undefined : (JSON.parse(text) as unknown),
    };
    this.requests.push(recorded);
    const answer = this.handler(recorded);
    if (answer !== undefined) return answer;
    const resources = RESOURCES[url.pathname];
    if (resources !== undefined) {
      const groupVersion = url.pathname.replace(/^\/apis?\//, "");
      return {
        status: 200,
        body: {
          kind: "APIResourceList",
          apiVersion: "v1",
          groupVersion,
          resources: resources.map((r) => ({ ...r, singularName: "", verbs: ["get", "list", "patch", "delete"] })),
        },
      };
    }
    return status(404, "NotFound", `${url.pathname} not found`);
  }
}
