/**
 * Objects laid out as the API server writes them (built-in kinds and custom resources, with managedFields),
 * for the tests of the readers that cut managedFields out before parsing (list-items.ts, watch-stream.ts).
 */
import fc from "fast-check";

/**
 * V8's JSON.parse (Node 24.21) can give the key `\` for the key `"`: `JSON.parse('{"\\\\":1}')` and then
 * `JSON.parse('{"\\"":1}')` yields `{"\\":1}` (an object key of one escaped backslash, then one of one escaped
 * quote; other keys are read right). The reader and the expected value both come from JSON.parse, in different
 * orders, so a document with such a key can make them differ by V8 alone: those documents are not drawn.
 * No Kubernetes key can be `"` or `\` (label and annotation keys are qualified names).
 */
export const ONE_CHAR_ESCAPED_KEY = /"(?:\\\\|\\")"\s*:/;
export function assumeV8ReadsAlike(text: string): void {
  fc.pre(!ONE_CHAR_ESCAPED_KEY.test(text));
}

/** managedFields as the API server writes them: strings, and fieldsV1 an object of objects. */
export const MANAGED = [
  {
    manager: "canaryapp",
    operation: "Apply",
    apiVersion: "v1",
    time: "2026-11-26T10:00:00Z",
    fieldsType: "FieldsV1",
    fieldsV1: { "f:spec": { "f:ports": { 'k:{"port":80,"protocol":"TCP"}': { ".": {}, "f:port": {} } } } },
  },
  {
    manager: "kubectl",
    operation: "Update",
    apiVersion: "v1",
    time: "2026-11-26T10:00:01Z",
    fieldsType: "FieldsV1",
    fieldsV1: {},
  },
];

/** An item laid out as the API server writes a built-in kind: metadata first, in its declared order. */
export function builtIn(name: string, extra: { labels?: object; managedFields?: unknown[]; spec?: object } = {}) {
  return {
    metadata: {
      name,
      namespace: "shop",
      uid: "u",
      resourceVersion: "7",
      creationTimestamp: "2026-11-26T10:00:00Z",
      labels: extra.labels ?? { app: name },
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({ spec: { a: [1] } }) },
      ...(extra.managedFields === undefined ? {} : { managedFields: extra.managedFields }),
    },
    spec: extra.spec ?? { ports: [{ port: 80 }], selector: { app: name } },
    status: { loadBalancer: {} },
  };
}

/** An item laid out as the API server writes a custom resource: keys sorted. */
export function custom(name: string, extra: { labels?: object; managedFields?: unknown[]; spec?: object } = {}) {
  return {
    apiVersion: "canaryapp.io/v1alpha1",
    kind: "CanaryApp",
    metadata: {
      annotations: { note: '"name":"x"' },
      creationTimestamp: "2026-11-26T10:00:00Z",
      generation: 1,
      labels: extra.labels ?? { app: name },
      ...(extra.managedFields === undefined ? {} : { managedFields: extra.managedFields }),
      name,
      namespace: "shop",
      resourceVersion: "7",
      uid: "u",
    },
    spec: extra.spec ?? { image: "app:v1" },
  };
}

/** A built-in kind as a watch event's object is laid out: its kind and apiVersion first, then as in a list. */
export function watchedBuiltIn(name: string, extra: Parameters<typeof builtIn>[1] = {}) {
  return { kind: "Service", apiVersion: "v1", ...builtIn(name, extra) };
}

export const bytesOf = (item: unknown) => Buffer.from(JSON.stringify(item));

/**
 * The parts of an object (name, labels, managedFields, spec) drawn with text that looks like the layouts' own
 * markers (a managedFields key, the bytes that end one, brackets, quotes), for {@link builtIn} and {@link custom}.
 */
export function objectParts() {
  const look = fc.constantFrom(
    ',"managedFields":[',
    ']},"spec":{',
    '}],"name":"',
    '"name":"',
    '"spec":{',
    '},{"metadata":{"name":',
    '{"kind":"',
    '","object":',
    "[",
    "]",
    "\\",
    '"',
  );
  const text = fc.oneof(
    fc.string({ unit: "grapheme", maxLength: 8 }),
    look,
    fc.array(look, { maxLength: 3 }).map((l) => l.join("")),
  );
  const entry = fc.record({
    manager: text,
    operation: fc.constantFrom("Apply", "Update"),
    time: text,
    fieldsType: fc.constant("FieldsV1"),
    fieldsV1: fc.dictionary(text, fc.dictionary(text, fc.constant({}), { maxKeys: 2 }), { maxKeys: 3 }),
  });
  return fc.record({
    name: text,
    labels: fc.dictionary(fc.oneof(text, fc.constant("name")), text, { maxKeys: 3 }),
    managedFields: fc.option(fc.array(entry, { maxLength: 3 }), { nil: undefined }),
    spec: fc.dictionary(
      fc.oneof(text, fc.constantFrom("managedFields", "name", "spec")),
      fc.jsonValue({ maxDepth: 2 }),
      {
        maxKeys: 3,
      },
    ),
  });
}
