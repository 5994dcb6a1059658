/**
 * Reads a list response as it arrives: each element of its `items` array is parsed on its own (by
 * `JSON.parse`, the engine's parser) as soon as its last byte is in, and handed to `onItem`. See ADR 0019.
 *
 * Why: a whole list at 5,000 apps is tens of megabytes. Parsed at once, every object in it (managedFields,
 * status the controller never reads) is alive together until the informer has cut each one down, so the
 * collector promotes and compacts all of it; and nothing is parsed before the last byte is in. Item by item,
 * what an item does not keep dies young, and parsing overlaps the server's sending.
 *
 * How, without a scan in JavaScript (the controller runs without V8's optimising compilers, where a loop over
 * every byte costs more than parsing them): the API server writes the items one after another with nothing
 * between them but a comma, and every item begins the same way (`{"metadata":{"name":` for built-in kinds,
 * `{"apiVersion":"…","kind":` for custom resources). The bytes `},` followed by that beginning are searched
 * for natively (`Buffer.indexOf`). Such a place may also be inside an item (two objects of a nested array
 * beginning alike), but `JSON.parse` of the bytes from the item's start up to it succeeds only at the item's
 * end: cut anywhere else, the text ends inside a string or with a brace open. So an item is handed over only
 * when it parsed whole, and every item starts where the last one ended.
 *
 * Anything not read that way — the document around the items, the last item, a response that is not laid out
 * as expected — is parsed at the end as the document with the handed items taken out (still valid JSON), and
 * its remaining items are handed over then. The result is always what `JSON.parse` of the whole would give.
 *
 * `withoutManagedFields`: each item is handed over without `metadata.managedFields` (the informers drop it, and
 * it is a third to a half of a list's bytes and objects). Where an item's layout proves where its managedFields
 * begin and end, those bytes are cut out before the item is parsed (see `managedFieldsBytes`); otherwise the
 * item is parsed whole and the field deleted. Either way the item is `JSON.parse`'s less that one field.
 */
export class ListItemReader {
  /** The document up to and including the `[` of `items`, once found at its top. */
  #head: Buffer | undefined;
  /** Bytes read and not handed over (`#buf[#start..#end)`): the document so far, then from the next item on. */
  #buf: Buffer = Buffer.allocUnsafe(0);
  #start = 0;
  #end = 0;
  /** What every item begins with, preceded by `},`; undefined until the first item has begun. */
  #separator: Buffer | undefined;
  /** Where in the unread bytes the next search begins. */
  #searchFrom = 0;
  /** Splitting gave up (an unexpected layout): everything is parsed at the end. */
  #whole = false;

  constructor(
    private readonly onItem: (item: unknown) => void,
    private readonly options: { withoutManagedFields?: boolean } = {},
  ) {}

  /** Reads the next chunk of the document; throws what `onItem` throws. */
  push(chunk: Buffer): void {
    this.#append(chunk);
    if (this.#whole) return;
    if (this.#head === undefined) this.#findItems();
    if (this.#head !== undefined) this.#split();
  }

  /**
   * The document with no items (`items` is `[]`), once every chunk has been pushed; the items not handed over
   * yet (the last one at least) are handed over now. Throws a SyntaxError when the document is not JSON.
   */
  end(): unknown {
    const unread = this.#buf.subarray(this.#start, this.#end);
    const text = (this.#head === undefined ? unread : Buffer.concat([this.#head, unread])).toString("utf8");
    const document = JSON.parse(text) as { items?: unknown };
    if (Array.isArray(document.items)) {
      for (const item of document.items as unknown[]) this.onItem(this.#trimmed(item));
      document.items = [];
    }
    return document;
  }

  /** Appends to the unread bytes; their space doubles when full, so every byte is copied about once. */
  #append(chunk: Buffer): void {
    if (this.#end + chunk.length > this.#buf.length) {
      const unread = this.#end - this.#start;
      const grown = Buffer.allocUnsafe(Math.max(2 * (unread + chunk.length), MIN_BUFFER));
      this.#buf.copy(grown, 0, this.#start, this.#end);
      this.#buf = grown;
      this.#start = 0;
      this.#end = unread;
    }
    chunk.copy(this.#buf, this.#end);
    this.#end += chunk.length;
  }

  /** Looks for the `items` array at the top of the document; the bytes after its `[` are the unread ones. */
  #findItems(): void {
    const unread = this.#buf.subarray(this.#start, this.#end);
    const at = unread.indexOf(ITEMS_KEY, this.#searchFrom);
    if (at < 0) {
      this.#searchFrom = Math.max(0, unread.length - ITEMS_KEY.length + 1);
      // A list's own fields come first and are few: so far in, the layout is not the one expected.
      if (unread.length > MAX_HEAD) this.#whole = true;
      return;
    }
    if (!atTop(unread.subarray(0, at))) {
      this.#whole = true;
      return;
    }
    const open = at + ITEMS_KEY.length;
    this.#head = Buffer.from(unread.subarray(0, open));
    this.#start += open;
    this.#searchFrom = 0;
  }

  /** Hands over every complete item at the start of the unread bytes whose end is followed by the separator. */
  #split(): void {
    let unread = this.#buf.subarray(this.#start, this.#end);
    if (this.#separator === undefined) {
      const separator = separatorOf(unread);
      if (separator === "unknown") return;
      if (separator === "none") {
        this.#whole = true;
        return;
      }
      this.#separator = separator;
    }
    const separator = this.#separator;
    let from = this.#searchFrom;
    for (;;) {
      const at = unread.indexOf(separator, from);
      if (at < 0) break;
      const item = this.#parsedItem(unread.subarray(0, at + 1));
      if (item === NOT_AN_ITEM) {
        from = at + 1;
        continue;
      }
      this.onItem(item);
      this.#start += at + 2;
      unread = unread.subarray(at + 2);
      from = 0;
    }
    // A separator may straddle the end of what is in: its first bytes are searched again with the next chunk.
    this.#searchFrom = Math.max(from, unread.length - separator.length + 1, 0);
  }

  /** `bytes` parsed as one item (without its managedFields if asked), or NOT_AN_ITEM when they are not one. */
  #parsedItem(bytes: Buffer): unknown {
    if (this.options.withoutManagedFields === true) {
      const cut = managedFieldsBytes(bytes);
      if (cut !== undefined) {
        // The cut is a whole member of the metadata object: the rest parses exactly when the item does.
        const item = parsedText(bytes.toString("utf8", 0, cut.from) + bytes.toString("utf8", cut.to));
        if (item !== NOT_AN_ITEM) return item;
      }
    }
    const item = parsed(bytes);
    return item === NOT_AN_ITEM ? item : this.#trimmed(item);
  }

  #trimmed(item: unknown): unknown {
    return this.options.withoutManagedFields === true ? withoutManagedFields(item) : item;
  }
}

/**
 * Where an item's `metadata.managedFields` lies in its bytes (`[from, to)`, the comma before it included), when
 * that can be told without parsing; undefined otherwise (the item is then parsed whole). Only from layouts the
 * API server writes, each of which proves the bytes are exactly that member:
 * - the key is searched as `,"managedFields":[`. Its quotes cannot be inside a string (a quote inside a string
 *   is escaped, and a string cannot close on a comma and go on with a letter), so this is a key whose value is
 *   an array; before metadata's own managedFields, no field of metadata has a key with an array value;
 * - managedFields entries hold strings and an object of objects (fieldsV1), never an array: the member ends at
 *   the first `]` after the key, which must come before any other `[` (else: undefined);
 * - built-in kinds (items begin `{"metadata":{`, or `{"kind":"` as a watch event's object does, its kind and
 *   apiVersion first) write metadata's fields in their declared order, managedFields last: the `]` is followed by
 *   `},"spec":{`, and that must be the first `"spec":{` of the item (none earlier, as a managedFields inside the
 *   spec would have);
 * - custom resources (items begin `{"apiVersion":`) write keys sorted: managedFields is followed by metadata's
 *   `"name"`, which must be the first `"name":"` of the item (one earlier, e.g. a label `name`, or the metadata
 *   name itself when the managedFields found is in the spec: undefined).
 */
export function managedFieldsBytes(item: Buffer): { from: number; to: number } | undefined {
  const from = item.indexOf(MANAGED_FIELDS_KEY);
  if (from < 0) return undefined;
  const open = from + MANAGED_FIELDS_KEY.length;
  let close: number;
  if (startsWith(item, BUILT_IN_START) || startsWith(item, WATCHED_BUILT_IN_START)) {
    const at = item.indexOf(BUILT_IN_AFTER, open);
    if (at < 0 || item.indexOf(SPEC_KEY) !== at + 3) return undefined;
    close = at;
  } else if (startsWith(item, CUSTOM_START)) {
    const at = item.indexOf(CUSTOM_AFTER, open);
    if (at < 0 || item.indexOf(NAME_KEY) !== at + 3) return undefined;
    close = at + 1;
  } else return undefined;
  const inner = item.indexOf(OPEN_BRACKET, open);
  if (inner >= 0 && inner < close) return undefined;
  return { from, to: close + 1 };
}

function startsWith(bytes: Buffer, prefix: Buffer): boolean {
  return bytes.length >= prefix.length && bytes.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/**
 * `obj` with its `metadata.managedFields` deleted (in place: a parsed answer nobody else holds), whatever `obj` is:
 * anything without a metadata object is left as it is. The one place the field is dropped after parsing (list
 * items, watch events, objects about to be cached).
 */
export function withoutManagedFields<T>(obj: T): T {
  if (isRecord(obj) && isRecord(obj["metadata"])) delete obj["metadata"]["managedFields"];
  return obj;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const MANAGED_FIELDS_KEY = Buffer.from(',"managedFields":[');
const BUILT_IN_START = Buffer.from('{"metadata":{');
const WATCHED_BUILT_IN_START = Buffer.from('{"kind":"');
const BUILT_IN_AFTER = Buffer.from(']},"spec":{');
const SPEC_KEY = Buffer.from('"spec":{');
const CUSTOM_START = Buffer.from('{"apiVersion":');
const CUSTOM_AFTER = Buffer.from('}],"name":"');
const NAME_KEY = Buffer.from('"name":"');

const ITEMS_KEY = Buffer.from('"items":[');
const NOT_AN_ITEM = Symbol("not an item");

/** `bytes` parsed, or NOT_AN_ITEM when they are not one JSON value. */
function parsed(bytes: Buffer): unknown {
  return parsedText(bytes.toString("utf8"));
}

function parsedText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_AN_ITEM;
  }
}

/**
 * `},` and the first item's beginning up to its second `:` (`{"metadata":{"name":`,
 * `{"apiVersion":"canaryapp.io/v1alpha1","kind":`); "none" when the items are not laid out that way (an empty
 * array, white space), "unknown" while too few bytes are in to tell.
 */
function separatorOf(rest: Buffer): Buffer | "none" | "unknown" {
  if (rest.length < 2) return "unknown";
  if (rest[0] !== OPEN_BRACE || rest[1] !== QUOTE) return "none";
  let colons = 0;
  const limit = Math.min(rest.length, MAX_SEPARATOR);
  for (let i = 2; i < limit; i++) {
    const byte = rest[i];
    if (byte === BACKSLASH || byte === SPACE || byte === NEWLINE) return "none";
    if (byte === COLON && ++colons === 2) return Buffer.concat([CLOSE_AND_COMMA, rest.subarray(0, i + 1)]);
  }
  return rest.length >= MAX_SEPARATOR ? "none" : "unknown";
}

/**
 * Whether `head` (the document up to a `"items":[`) leaves that key in the document's own object: one brace
 * open, counted outside strings. The head is the list's few top-level fields, so this scan is short.
 */
function atTop(head: Buffer): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < head.length; i++) {
    const byte = head[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth++;
    else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return depth === 1 && !inString;
}

const MAX_SEPARATOR = 96;
/** How far into a response its `items` must have begun to be split (a list's own fields are a few hundred bytes). */
const MAX_HEAD = 65_536;
const MIN_BUFFER = 65_536;
const CLOSE_AND_COMMA = Buffer.from("},");
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COLON = 0x3a;
const SPACE = 0x20;
const NEWLINE = 0x0a;
