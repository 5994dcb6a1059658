import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { BodyTooLargeError, MAX_REQUEST_BODY_BYTES, postJson, RateLimitedError } from "./post.js";

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

  test("a body over the bound is refused before any connection", async () => {
    let connections = 0;
    await withServer(
      (_n, res) => res.writeHead(200).end(),
      async (url, received) => {
        const big = { metadata: { blob: "x".repeat(MAX_REQUEST_BODY_BYTES) } };
        await assert.rejects(postJson(url, big, fast), (err: unknown) => {
          assert.ok(err instanceof BodyTooLargeError);
          assert.match(
            err.message,
            /^the request body would be 65560 bytes, over the 65536-byte limit; nothing was sent$/,
          );
          return true;
        });
        // Just under the bound is sent.
        const fits = { b: "x".repeat(MAX_REQUEST_BODY_BYTES - 8) };
        assert.equal(JSON.stringify(fits).length, MAX_REQUEST_BODY_BYTES);
        assert.deepEqual(await postJson(url, fits, fast), { status: 200 });
        connections = received.length;
      },
    );
    assert.equal(connections, 1);
  });

  test("every attempt asks the rate limit first; a refusal stops the retries, unsent", async () => {
    await withServer(
      (_n, res) => res.writeHead(503).end(),
      async (url, received) => {
        let tokens = 2;
        const admit = () => tokens-- > 0;
        await assert.rejects(postJson(url, {}, { ...fast, retries: 5, admit }), RateLimitedError);
        assert.equal(received.length, 2, "the first attempt and one retry, then no more");
        await assert.rejects(postJson(url, {}, { ...fast, admit: () => false }), RateLimitedError);
        assert.equal(received.length, 2);
      },
    );
  });

  test("the answer's body is never read: an endless answer does not hold the call", async () => {
    let written = 0;
    await withServer(
      (_n, res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        const chunk = Buffer.alloc(64 * 1024, 0x61);
        // Writes as long as the connection takes it; a reader of the body would never finish.
        const pump = (): void => {
          while (!res.destroyed && res.write(chunk)) written += chunk.length;
          if (!res.destroyed) res.once("drain", pump);
        };
        pump();
      },
      async (url) => {
        const started = Date.now();
        assert.deepEqual(await postJson(url, {}, { ...fast, retries: 0 }), { status: 200 });
        assert.ok(Date.now() - started < 1_000, "resolved on the status line");
      },
    );
    assert.ok(written < 16 * 1024 * 1024, `the server could write only what buffers hold (${written} bytes)`);
  });
});
