/**
 * Local HTTP servers on 127.0.0.1 for the provider's tests: a scripted stand-in for Prometheus (for failure
 * modes a real one will not produce on demand) and a counting proxy in front of a real one. Both record
 * every request they receive, so tests can assert how many attempts were made.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
}

/** One scripted answer. `body` objects are sent as JSON; `delayMs` holds the answer back. */
export interface Reply {
  status: number;
  body?: string | object;
  delayMs?: number;
}

export interface TestServer {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** A Prometheus `/api/v1/query` success body for a scalar. */
export function scalarBody(value: string): object {
  return { status: "success", data: { resultType: "scalar", result: [Date.now() / 1000, value] } };
}

/** A Prometheus `/api/v1/query` success body for a vector with one series per value. */
export function vectorBody(values: string[]): object {
  return {
    status: "success",
    data: {
      resultType: "vector",
      result: values.map((v, i) => ({ metric: { series: String(i) }, value: [Date.now() / 1000, v] })),
    },
  };
}

async function listen(server: Server, requests: RecordedRequest[]): Promise<TestServer> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        // Held-back answers must not keep the server (and the test run) alive.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A server that answers the n-th request (0-based) with `script(n)`. */
export function startFakePrometheus(script: (n: number, request: RecordedRequest) => Reply): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const recorded = { method: req.method ?? "", url: req.url ?? "", headers: req.headers };
    const reply = script(requests.length, recorded);
    requests.push(recorded);
    const send = () => {
      const json = typeof reply.body === "object";
      res.writeHead(reply.status, { "content-type": json ? "application/json" : "text/plain" });
      res.end(json ? JSON.stringify(reply.body) : (reply.body ?? ""));
    };
    if (reply.delayMs) setTimeout(send, reply.delayMs);
    else send();
  });
  return listen(server, requests);
}

/** A proxy that forwards every request to `upstream` unchanged. */
export function startCountingProxy(upstream: string): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const target = new URL(upstream);
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    const forwarded = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on("error", () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(forwarded);
  });
  return listen(server, requests);
}
