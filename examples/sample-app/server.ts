/**
 * The sample app of the canaryapp demo: a tiny HTTP server equivalent to go-status-code-server.
 *   GET /hello    → 200 "hello from <VERSION>"  (500 in v3, the deliberately bad release)
 *   GET /nothello → 500
 *   GET /healthz  → 200
 * VERSION and PORT come from the environment. Node 24 runs this file as is (type stripping); the image
 * ships the stripped JavaScript.
 */
import { createServer, type ServerResponse } from "node:http";

const version = process.env.VERSION ?? "v1";
const port = Number(process.env.PORT ?? 8080);
/** v3 is the release that fails: the canary analysis must catch it and roll it back. */
const broken = version === "v3";

function reply(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(`${body}\n`);
}

const server = createServer((req, res) => {
  const path = new URL(req.url ?? "/", "http://sample-app").pathname;
  switch (path) {
    case "/hello":
      if (broken) reply(res, 500, `internal error in ${version}`);
      else reply(res, 200, `hello from ${version}`);
      return;
    case "/nothello":
      reply(res, 500, "not hello");
      return;
    case "/healthz":
      reply(res, 200, "ok");
      return;
    default:
      reply(res, 404, "not found");
  }
});

server.listen(port, () => {
  console.log(JSON.stringify({ msg: "listening", port, version }));
});

// Kubernetes sends SIGTERM on pod deletion: finish in-flight requests, then exit.
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  });
}
