import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ListItemReader, managedFieldsBytes } from "./list-items.js";
import {
  assumeV8ReadsAlike,
  builtIn,
  bytesOf,
  custom,
  MANAGED,
  objectParts,
  ONE_CHAR_ESCAPED_KEY,
} from "./object-layouts.test-helpers.js";

/** Reads `text` in chunks cut at `cuts` (byte offsets); resolves to the items and the rest. */
function read(
  text: string,
  cuts: readonly number[] = [],
  options: { withoutManagedFields?: boolean } = {},
): { items: unknown[]; rest: unknown } {
  const bytes = Buffer.from(text, "utf8");
  const items: unknown[] = [];
  const reader = new ListItemReader((item) => items.push(item), options);
  let from = 0;
  for (const cut of [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b)) {
    reader.push(bytes.subarray(from, cut));
    from = cut;
  }
  reader.push(bytes.subarray(from));
  return { items, rest: reader.end() };
}

const tricky = {
  kind: "DeploymentList",
  apiVersion: "apps/v1",
  metadata: { resourceVersion: "42", note: 'a "quoted" ]}[{ \\ "items": [' },
  items: [
    { metadata: { name: "a", annotations: { x: '{"items":[1,2]}', y: "\\", z: "é ✓ 𝄞 ]" } }, spec: { l: [[], [{}]] } },
    { metadata: { name: 'b"}' } },
  ],
};

describe("ListItemReader", () => {
  test("hands each item over parsed and returns the rest with no items", () => {
    const { items, rest } = read(JSON.stringify(tricky, null, 1));
    assert.deepEqual(items, tricky.items);
    assert.deepEqual(rest, { ...tricky, items: [] });
  });

  test("an item is handed over as soon as the next one has begun; the last at the end", () => {
    const text = JSON.stringify({ metadata: {}, items: [{ metadata: { name: "a" } }, { metadata: { name: "b" } }] });
    const items: unknown[] = [];
    const reader = new ListItemReader((item) => items.push(item));
    const second = text.indexOf('{"metadata":{"name":"b"');
    reader.push(Buffer.from(text.slice(0, second + 10)));
    assert.deepEqual(items, [], "the next item's beginning is not all in");
    reader.push(Buffer.from(text.slice(second + 10, second + 21)));
    assert.deepEqual(items, [{ metadata: { name: "a" } }]);
    reader.push(Buffer.from(text.slice(second + 21)));
    assert.deepEqual(reader.end(), { metadata: {}, items: [] });
    assert.deepEqual(items, [{ metadata: { name: "a" } }, { metadata: { name: "b" } }]);
  });

  test("a nested object or a string that looks like an item's beginning does not split an item", () => {
    const look = '},{"metadata":{"name":';
    const list = {
      kind: "StatefulSetList",
      metadata: { resourceVersion: "9" },
      items: [
        {
          metadata: { name: "a", annotations: { x: look, y: `${look}"}]}` } },
          spec: { volumeClaimTemplates: [{ metadata: { name: "v1" } }, { metadata: { name: "v2" } }] },
        },
        { metadata: { name: look }, spec: {} },
        { metadata: { name: "c" } },
      ],
    };
    const text = JSON.stringify(list);
    const handed: unknown[] = [];
    const reader = new ListItemReader((item) => handed.push(item));
    reader.push(Buffer.from(text));
    assert.equal(handed.length, 2, "all but the last handed over before the end");
    assert.deepEqual(reader.end(), { ...list, items: [] });
    assert.deepEqual(handed, list.items);
  });

  test("custom resources split on their apiVersion and kind, not on a managedFields entry", () => {
    const app = (name: string) => ({
      apiVersion: "canaryapp.io/v1alpha1",
      kind: "CanaryApp",
      metadata: {
        managedFields: [
          { apiVersion: "canaryapp.io/v1alpha1", fieldsType: "FieldsV1" },
          { apiVersion: "canaryapp.io/v1alpha1", fieldsType: "FieldsV1" },
        ],
        name,
      },
    });
    const list = { apiVersion: "canaryapp.io/v1alpha1", items: [app("a"), app("b"), app("c")], kind: "CanaryAppList" };
    const handed: unknown[] = [];
    const reader = new ListItemReader((item) => handed.push(item));
    reader.push(Buffer.from(JSON.stringify(list)));
    assert.equal(handed.length, 2);
    assert.deepEqual(reader.end(), { ...list, items: [] });
    assert.deepEqual(handed, list.items);
  });

  test("an empty or absent items array, and items before the metadata", () => {
    assert.deepEqual(read('{"items":[],"metadata":{"resourceVersion":"1"}}'), {
      items: [],
      rest: { items: [], metadata: { resourceVersion: "1" } },
    });
    assert.deepEqual(read('{"kind":"List","metadata":{}}'), { items: [], rest: { kind: "List", metadata: {} } });
    assert.deepEqual(read('{"items":[{"a":[]}], "metadata":{"resourceVersion":"7"}}').items, [{ a: [] }]);
  });

  test("a document cut short, and an item that is not JSON, are errors", () => {
    assert.throws(() => read('{"items":[{"a":1}'), SyntaxError);
    assert.throws(() => read('{"items":[{"a":tru}]}'), SyntaxError);
  });

  test("a list of items that begin alike, cut into chunks anywhere, reads as JSON.parse reads it", () => {
    const look = fc.constantFrom('},{"metadata":{"name":', '{"metadata":{"name":', "}]", "\\", '"', "é𝄞");
    const text = fc.oneof(
      fc.string({ unit: "grapheme" }),
      look,
      fc.array(look).map((l) => l.join("")),
    );
    const nested = fc.array(fc.record({ metadata: fc.record({ name: text }) }), { maxLength: 3 });
    const item = fc.record({
      metadata: fc.record({ name: text, annotations: fc.dictionary(text, text, { maxKeys: 3 }) }),
      spec: fc.record({ list: nested, value: fc.jsonValue({ maxDepth: 2 }) }),
    });
    const list = fc.record({
      kind: fc.constant("List"),
      metadata: fc.record({ resourceVersion: fc.string() }),
      items: fc.array(item, { maxLength: 6 }),
    });
    fc.assert(
      fc.property(list, fc.array(fc.nat({ max: 2000 }), { maxLength: 20 }), (doc, cuts) => {
        const text = JSON.stringify(doc);
        assumeV8ReadsAlike(text);
        const { items, rest } = read(text, cuts);
        const parsed = JSON.parse(text) as typeof doc;
        assert.deepEqual(items, parsed.items);
        assert.deepEqual(rest, { ...parsed, items: [] });
      }),
      { numRuns: 500 },
    );
  });

  test("any list cut into chunks anywhere reads as JSON.parse reads it", () => {
    const item = fc.dictionary(fc.string({ unit: "grapheme" }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });
    const list = fc.record({
      kind: fc.string({ unit: "grapheme" }),
      metadata: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      items: fc.array(item, { maxLength: 5 }),
    });
    fc.assert(
      fc.property(list, fc.array(fc.nat({ max: 400 }), { maxLength: 12 }), fc.boolean(), (doc, cuts, pretty) => {
        const text = JSON.stringify(doc, null, pretty ? 2 : undefined);
        assumeV8ReadsAlike(text);
        const { items, rest } = read(text, cuts);
        const parsed = JSON.parse(text) as typeof doc;
        assert.deepEqual(items, parsed.items);
        assert.deepEqual(rest, { ...parsed, items: [] });
      }),
      { numRuns: 500 },
    );
  });
});

/** `JSON.parse` of a list's text, each item's metadata.managedFields deleted. */
function parsedWithout(text: string): { items: unknown[] } {
  const doc = JSON.parse(text) as { items: { metadata?: { managedFields?: unknown } }[] };
  for (const item of doc.items) delete item.metadata?.managedFields;
  return doc;
}

describe("ListItemReader without managedFields", () => {
  test("built-in and custom items: managedFields found in their bytes, and the items read without it", () => {
    for (const make of [builtIn, custom]) {
      const items = ["a", "b", "c"].map((name) => make(name, { managedFields: MANAGED }));
      const cut = managedFieldsBytes(bytesOf(items[0]));
      assert.ok(cut !== undefined, make.name);
      assert.match(bytesOf(items[0]).toString("utf8", cut.from, cut.to), /^,"managedFields":\[\{"manager".*\}\]$/);
      const text = JSON.stringify({ kind: "List", metadata: { resourceVersion: "9" }, items });
      const { items: read1 } = read(text, [], { withoutManagedFields: true });
      assert.deepEqual(read1, parsedWithout(text).items, make.name);
      assert.ok(read1.every((i) => !("managedFields" in (i as { metadata: object }).metadata)));
    }
  });

  test("not cut where the layout does not prove it: a managedFields elsewhere, a label `name`, an array inside", () => {
    const inSpec = { managedFields: [{ manager: "x" }], name: "a" };
    const unproven = [
      builtIn("a", { spec: { template: { metadata: { name: "t", managedFields: MANAGED }, spec: {} } } }),
      custom("a", { spec: inSpec }),
      custom("a", { labels: { app: "a", name: "a" }, managedFields: MANAGED }),
      builtIn("a", { managedFields: [{ manager: "m", fieldsV1: { "f:x": [1] } }] }),
      custom("a", { managedFields: [{ manager: "m]},[" }] }),
    ];
    for (const item of unproven) assert.equal(managedFieldsBytes(bytesOf(item)), undefined, JSON.stringify(item));
    const text = JSON.stringify({
      kind: "List",
      metadata: {},
      items: [...unproven, builtIn("b", { managedFields: MANAGED })],
    });
    assert.deepEqual(read(text, [], { withoutManagedFields: true }).items, parsedWithout(text).items);
    // The spec's own managedFields is kept: only metadata's is dropped.
    assert.deepEqual((read(text, [], { withoutManagedFields: true }).items[1] as { spec: unknown }).spec, inSpec);
  });

  test("any list of items laid out as the API server writes them reads as JSON.parse less metadata.managedFields", () => {
    const parts = objectParts();
    const item = fc.tuple(fc.boolean(), parts).map(([isCustom, p]) => (isCustom ? custom : builtIn)(p.name, p));
    let cut = 0;
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 5 }),
        fc.array(fc.nat({ max: 3000 }), { maxLength: 12 }),
        (items, cuts) => {
          cut += items.filter((i) => managedFieldsBytes(bytesOf(i)) !== undefined).length;
          const text = JSON.stringify({ kind: "List", metadata: { resourceVersion: "1" }, items });
          assumeV8ReadsAlike(text);
          const { items: got, rest } = read(text, cuts, { withoutManagedFields: true });
          assert.deepEqual(got, parsedWithout(text).items);
          assert.deepEqual(rest, { kind: "List", metadata: { resourceVersion: "1" }, items: [] });
        },
      ),
      { numRuns: 1000 },
    );
    assert.ok(cut > 200, `only ${cut} items were cut before parsing`);
  });
});

describe("the documents the property tests leave out (see assumeV8ReadsAlike)", () => {
  test("exactly those with a key of one escaped backslash or one escaped quote", () => {
    assert.ok(ONE_CHAR_ESCAPED_KEY.test('{"\\\\":1}'));
    assert.ok(ONE_CHAR_ESCAPED_KEY.test('{"\\"" : 1}'));
    assert.ok(!ONE_CHAR_ESCAPED_KEY.test('{"a\\\\":1,"\\"a":2}'));
    assert.ok(!ONE_CHAR_ESCAPED_KEY.test('{"a":"\\\\"}'));
  });
});
