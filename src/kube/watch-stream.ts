import type { Readable } from "node:stream";
import { managedFieldsBytes, withoutManagedFields as withoutManagedFieldsOf } from "./list-items.js";

/**
 * How long a watch may stay silent before the client gives up on it: the last resort, for a watch whose
 * connection nothing else checks. Watches ask the server to end them after 5–10 minutes (`timeoutSeconds`, as
 * client-go does), so this only has to outlast the server's own end; bookmarks cannot be relied on to break
 * the silence sooner (one in 170 s was measured on a quiet watch). A dead connection is noticed sooner where
 * the controller's watches run over HTTP/2: a connection silent for 30 s is pinged, and closed when the PING
 * goes unanswered for 15 s (src/kube/http2-watches.ts). Watches through a proxy, or to a server that speaks
 * only HTTP/1.1, have only this. (client-node's `Watch` gives up after 30 s of silence, which would reopen
 * every quiet watch twice a minute, each time a request.)
 */
export const WATCH_INACTIVITY_TIMEOUT_MS = 11 * 60 * 1000;

/** A failed watch request: the HTTP status and the Status the server sent, as the error helpers read them. */
export class WatchRequestError extends Error {
  constructor(
    message: string,
    readonly statusCode: number,
    readonly body: string,
  ) {
    super(message);
    this.name = "WatchRequestError";
  }
}

/** The response to a watch request, whichever HTTP client made it. */
export interface OpenedWatch {
  status: number;
  statusText: string;
  /** The body as a byte stream. */
  body: Readable;
}

/** How a watch's events are read. */
export interface WatchReadOptions {
  /**
   * Each event's object is handed over without `metadata.managedFields` (an informer drops it: it is a third to
   * a half of a server-side applied object). Where the object's layout proves where it lies, its bytes are cut
   * out before the event is parsed (src/kube/list-items.ts, `managedFieldsBytes`), so it is never parsed;
   * otherwise the event is parsed whole and the field deleted.
   */
  withoutManagedFields?: boolean;
}

/**
 * Reads watch events of one collection from a long GET: newline-delimited JSON `{type, object}`, with an
 * inactivity timeout. `open` makes the request (with the signal that ends it); `done` is called exactly
 * once: with nothing when the server ends the watch or the caller aborts it, with an error otherwise (a
 * `TimeoutError` when it stayed silent too long, a {@link WatchRequestError} when the server refused it).
 *
 * The body is read by its 'data' events and split at its newlines natively (`Buffer.indexOf`), each line parsed
 * by `JSON.parse` once it is whole: no text decoder, line reader or async iterator per event, and the inactivity
 * timer is refreshed, not made again, as data arrives.
 */
export function streamWatch(
  path: string,
  open: (signal: AbortSignal) => Promise<OpenedWatch>,
  callback: (type: string, object: unknown) => void,
  done: (err: unknown) => void,
  inactivityTimeoutMs = WATCH_INACTIVITY_TIMEOUT_MS,
  options: WatchReadOptions = {},
): { abort(): void } {
  const controller = new AbortController();
  let finished = false;
  const timer = setTimeout(() => {
    finish(new DOMException(`watch ${path}: no data for ${inactivityTimeoutMs} ms`, "TimeoutError"));
  }, inactivityTimeoutMs);
  timer.unref();
  const finish = (err: unknown): void => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    controller.abort();
    done(err);
  };
  const withoutManagedFields = options.withoutManagedFields === true;
  const onLine = (line: Buffer): void => {
    if (finished || line.length === 0) return;
    const event = parsedWatchEvent(line, withoutManagedFields);
    if (event !== undefined && typeof event.type === "string") callback(event.type, event.object);
  };

  const stream = async (): Promise<void> => {
    const response = await open(controller.signal);
    timer.refresh();
    if (response.status !== 200) {
      const chunks: Buffer[] = [];
      for await (const chunk of response.body) chunks.push(Buffer.from(chunk as Buffer));
      const text = response.statusText || "watch failed";
      throw new WatchRequestError(text, response.status, Buffer.concat(chunks).toString("utf8"));
    }
    const body = response.body;
    // A body that failed before it was read has told its error already: no 'error' would come.
    if (body.errored !== null) throw body.errored;
    const lines = new LineSplitter();
    await new Promise<void>((resolve, reject) => {
      body.on("data", (chunk: Buffer | Uint8Array | string) => {
        timer.refresh();
        try {
          lines.push(bytesOf(chunk), onLine);
        } catch (err) {
          body.destroy(err instanceof Error ? err : new Error(String(err)));
        }
        if (finished) body.destroy();
      });
      body.once("end", () => {
        try {
          lines.end(onLine);
          resolve();
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
      body.once("error", reject);
      // Destroyed without an error (an aborted or reset stream): the watch simply ended.
      body.once("close", () => resolve());
    });
  };
  // An abort or a timeout has already called `finish`; whatever the aborted stream then throws is moot.
  stream().then(
    () => finish(null),
    (err: unknown) => finish(err),
  );
  return { abort: () => finish(null) };
}

/** Splits bytes into the lines between their newlines, as they arrive; a line's bytes are copied only when it spans chunks. */
export class LineSplitter {
  /** The bytes of the line begun and not ended yet. */
  #pending: Buffer[] = [];

  push(chunk: Buffer, onLine: (line: Buffer) => void): void {
    let start = 0;
    for (let at = chunk.indexOf(NEWLINE); at >= 0; at = chunk.indexOf(NEWLINE, start)) {
      const part = chunk.subarray(start, at);
      start = at + 1;
      if (this.#pending.length === 0) onLine(part);
      else {
        const line = Buffer.concat([...this.#pending, part]);
        this.#pending = [];
        onLine(line);
      }
    }
    if (start < chunk.length) this.#pending.push(chunk.subarray(start));
  }

  /** The last line, when the bytes did not end with a newline. */
  end(onLine: (line: Buffer) => void): void {
    if (this.#pending.length === 0) return;
    const line = Buffer.concat(this.#pending);
    this.#pending = [];
    onLine(line);
  }
}

/**
 * One line of a watch as its event, or undefined when it is not JSON (white space, a line cut short). With
 * `withoutManagedFields`, the object comes without `metadata.managedFields`, cut out of the bytes before they are
 * parsed where the API server's layout (`{"type":"…","object":{…}}`, the object as a list item is laid out, a
 * built-in's kind and apiVersion first) proves where it lies; the result is always what parsing the whole line
 * and deleting the field would give.
 */
export function parsedWatchEvent(
  line: Buffer,
  withoutManagedFields: boolean,
): { type?: unknown; object?: unknown } | undefined {
  if (withoutManagedFields) {
    const cut = watchEventManagedFields(line);
    if (cut !== undefined) {
      // The cut is a whole member of the object's metadata: the rest parses exactly when the line does.
      const event = parsedEvent(Buffer.concat([line.subarray(0, cut.from), line.subarray(cut.to)]));
      if (event !== undefined) return event;
    }
  }
  const event = parsedEvent(line);
  if (withoutManagedFields && event !== undefined) withoutManagedFieldsOf(event.object);
  return event;
}

/**
 * Where the object's `metadata.managedFields` lies in an event line (`[from, to)`), when its layout proves it
 * (`managedFieldsBytes`); undefined otherwise.
 */
export function watchEventManagedFields(line: Buffer): { from: number; to: number } | undefined {
  const objectAt = objectStart(line);
  const cut = objectAt === undefined ? undefined : managedFieldsBytes(line.subarray(objectAt));
  return objectAt === undefined || cut === undefined ? undefined : { from: objectAt + cut.from, to: objectAt + cut.to };
}

/** Where the object of an event line laid out as `{"type":"…","object":{` begins; undefined for any other layout. */
function objectStart(line: Buffer): number | undefined {
  if (line.length < TYPE_KEY.length || line.compare(TYPE_KEY, 0, TYPE_KEY.length, 0, TYPE_KEY.length) !== 0) {
    return undefined;
  }
  // The type is one word (ADDED, MODIFIED, …): its closing quote is the first after the key.
  const typeEnd = line.indexOf(QUOTE, TYPE_KEY.length);
  if (
    typeEnd < 0 ||
    typeEnd + OBJECT_KEY.length > line.length ||
    line.compare(OBJECT_KEY, 0, OBJECT_KEY.length, typeEnd, typeEnd + OBJECT_KEY.length) !== 0
  ) {
    return undefined;
  }
  return typeEnd + OBJECT_KEY.length;
}

/** A chunk of a body as bytes: a Buffer as it is, a Uint8Array (a web stream's) viewed as one. */
function bytesOf(chunk: Buffer | Uint8Array | string): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  return typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

function parsedEvent(bytes: Buffer): { type?: unknown; object?: unknown } | undefined {
  try {
    const event = JSON.parse(bytes.toString("utf8")) as unknown;
    return typeof event === "object" && event !== null ? event : undefined;
  } catch {
    return undefined;
  }
}

const NEWLINE = 0x0a;
const QUOTE = 0x22;
const TYPE_KEY = Buffer.from('{"type":"');
const OBJECT_KEY = Buffer.from('","object":');
