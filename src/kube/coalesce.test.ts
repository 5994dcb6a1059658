import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, test } from "node:test";
import fc from "fast-check";
import { Coalesce } from "./coalesce.js";

async function through(chunks: Buffer[], size: number): Promise<Buffer[]> {
  const out: Buffer[] = [];
  const coalesce = new Coalesce(size);
  coalesce.on("data", (piece: Buffer) => out.push(piece));
  await pipeline(Readable.from(chunks), coalesce);
  return out;
}

describe("Coalesce", () => {
  test("joins chunks into pieces of at least `size` bytes, in order, losing and adding nothing", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 40 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 100 }),
        async (arrays, size) => {
          const chunks = arrays.map((a) => Buffer.from(a));
          const pieces = await through(chunks, size);
          assert.deepEqual(Buffer.concat(pieces), Buffer.concat(chunks));
          for (const piece of pieces.slice(0, -1))
            assert.ok(piece.length >= size, `a piece of ${piece.length} < ${size}`);
          const total = chunks.reduce((n, c) => n + c.length, 0);
          assert.ok(pieces.length <= Math.ceil(total / size), `${pieces.length} pieces for ${total} bytes`);
        },
      ),
    );
  });

  test("the rest is handed over when the stream ends; nothing for an empty stream", async () => {
    assert.deepEqual(await through([Buffer.from("ab"), Buffer.from("c")], 10), [Buffer.from("abc")]);
    assert.deepEqual(await through([], 10), []);
  });

  test("an error upstream ends the pipeline with it", async () => {
    const failing = new Readable({
      read() {
        this.push(Buffer.from("x"));
        this.destroy(new Error("connection reset"));
      },
    });
    await assert.rejects(
      pipeline(failing, new Coalesce(4), async function* (source) {
        for await (const _ of source) yield _;
      }),
      /connection reset/,
    );
  });

  test("refuses a size that is not a positive integer", () => {
    assert.throws(() => new Coalesce(0), /positive integer/);
    assert.throws(() => new Coalesce(1.5), /positive integer/);
  });
});
