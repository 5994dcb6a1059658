import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { postJson } from "./post.js";

interface Received {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A local server answering the n-th request (0-based) with `answer(n)`; records what it received. */
async function withServer(
  answer: (n: number, res: ServerResponse) => void,
  run: (url: string, received: Received[]) => Promise<void>,
): Promise<void> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      received.push({ method: req.method, url: req.url, headers: req.headers, body });
      answer(received.length - 1, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const fast = { timeoutSeconds: 2, retries: 2, minRetryDelayMs: 5 };

describe("postJson", () => {
  test("POSTs the body as JSON with the extra headers, and resolves the 2xx status", async () => {
    await withServer(
      (_n, res) => res.writeHead(202).end("accepted"),
      async (url, received) => {
        const answer = await postJson(url, { phase: "Promoting", n: 1 }, { ...fast, headers: { "x-key": "k1" } });
        assert.deepEqual(answer, { status: 202 });
        assert.equal(received.length, 1);
        assert.equal(received[0]?.method, "POST");
        assert.equal(received[0]?.url, "/hook");
        assert.equal(received[0]?.headers["content-type"], "application/json");
        assert.equal(received[0]?.headers["x-key"], "k1");
        assert.deepEqual(JSON.parse(received[0]?.body ?? ""), { phase: "Promoting", n: 1 });
      },
    );
  });

  test("a 5xx is retried until a 2xx; a status that stays bad is the answer once retries are spent", async () => {
    await withServer(
      (n, res) => res.writeHead(n < 2 ? 503 : 200).end(),
      async (url, received) => {
        assert.deepEqual(await postJson(url, {}, fast), { status: 200 });
        assert.equal(received.length, 3);
      },
    );
    await withServer(
      (_n, res) => res.writeHead(500).end(),
      async (url, received) => {
        assert.deepEqual(await postJson(url, {}, fast), { status: 500 });
        assert.equal(received.length, 3);
      },
    );
  });

  test("a redirect is an answer, never followed", async () => {
    await withServer(
      (_n, res) => res.writeHead(307, { location: "http://127.0.0.1:1/elsewhere" }).end(),
      async (url, received) => {
        assert.deepEqual(await postJson(url, {}, { ...fast, retries: 0 }), { status: 307 });
        assert.equal(received.length, 1);
      },
    );
  });

  test("no answer within the timeout is retried, then rejects", async () => {
    await withServer(
      () => undefined, // never answers
      async (url, received) => {
        await assert.rejects(postJson(url, {}, { timeoutSeconds: 0.2, retries: 1, minRetryDelayMs: 5 }));
        assert.equal(received.length, 2);
      },
    );
  });
});
