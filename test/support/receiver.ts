import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One POST the receiver got. */
export interface Received {
  at: number;
  path: string;
  body: Record<string, unknown>;
  /** The status it was answered with. */
  status: number;
}

/**
 * A local HTTP receiver for webhooks and notifications, in the test process. Each path answers with the
 * status `answer(path, body)` gives (200 unless told otherwise). Notices are deduplicated by their
 * idempotency key, as a receiver should: `notices()` holds the first accepted (2xx) copy of each.
 */
export interface Receiver {
  url: string;
  received: Received[];
  /** Accepted notices (answered 2xx), one per idempotency key, in the order they first arrived. */
  notices(path?: string): Record<string, unknown>[];
  answer: (path: string, body: Record<string, unknown>) => number;
  stop(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const receiver: Receiver = {
    url: "",
    received,
    notices: (path) => {
      const seen = new Map<string, Record<string, unknown>>();
      for (const r of received) {
        if (path !== undefined && r.path !== path) continue;
        const key = r.body["idempotencyKey"];
        if (typeof key !== "string" || r.status < 200 || r.status >= 300 || seen.has(key)) continue;
        seen.set(key, r.body);
      }
      return [...seen.values()];
    },
    answer: () => 200,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    req.on("end", () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        body = { raw: text };
      }
      const path = req.url ?? "/";
      const status = receiver.answer(path, body);
      received.push({ at: Date.now(), path, body, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
