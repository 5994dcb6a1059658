/**
 * The two answers of the tests' stand-ins for a tenant's Prometheus: a query answered 0 (as an attacker's
 * server would, to keep a rollout going), or the request passed on to a real Prometheus that sees who asks.
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";

/** Answers a Prometheus query with the scalar 0. */
export function answerZero(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ status: "success", data: { resultType: "scalar", result: [Date.now() / 1000, "0"] } }));
}

/**
 * Passes `req` on to `target` (its Host header rewritten) and its answer back; `body`: the request's body
 * already read, else the request is piped as it comes. No answer from `target` is a 502.
 */
export function forward(req: IncomingMessage, res: ServerResponse, target: URL, body?: Buffer): void {
  const headers: IncomingHttpHeaders = { ...req.headers, host: target.host };
  const forwarded = httpRequest(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  forwarded.on("error", () => res.writeHead(502).end());
  if (body === undefined) req.pipe(forwarded);
  else forwarded.end(body);
}
