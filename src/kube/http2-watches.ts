/**
 * Watches over HTTP/2, each connection checked with PING frames as client-go checks its own (ADR 0017, "Since:
 * watches over HTTP/2 with PINGs"). A connection from which nothing has been read for `readIdleTimeoutMs` is
 * sent a PING; one that does not answer within `pingTimeoutMs` is closed, which ends its watches with an error,
 * and their informers resume them on a new connection. A load balancer or proxy that stops forwarding without
 * closing (the old connection a black hole, new ones reaching a live API server) is so noticed within
 * 30 + 15 s, where TCP keepalive is answered by the proxy's own kernel and a quiet watch may see no bookmark
 * for minutes. A PING is a frame of the connection, not a request: the API server counts none, so a quiet
 * controller still makes no API request at rest.
 *
 * Every watch of one pool shares one connection, up to the number of streams the API server allows on it
 * (its SETTINGS_MAX_CONCURRENT_STREAMS: kube-apiserver's --http2-max-streams-per-connection, 100 when unset);
 * the next watch opens another connection. Past that limit node:http2 would queue the request on the
 * connection without an error or a timeout, and the watch would never start.
 */
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders, Settings } from "node:http2";
import { Readable } from "node:stream";
import type { SecureContext } from "node:tls";
import type { OpenedWatch } from "./watch-stream.js";

// Taken as CommonJS objects, as in rest.ts (ADR 0017); node:http2 only once a watch is opened over it.
const nodeTls = process.getBuiltinModule("node:tls");
const nodeNet = process.getBuiltinModule("node:net");
const { STATUS_CODES } = process.getBuiltinModule("node:http");

/**
 * client-go's defaults (k8s.io/apimachinery/pkg/util/net, SetTransportDefaults): a connection nothing was read
 * from for 30 s is pinged (HTTP2_READ_IDLE_TIMEOUT_SECONDS), and closed when the PING is not answered within 15 s
 * (HTTP2_PING_TIMEOUT_SECONDS).
 */
export const READ_IDLE_TIMEOUT_MS = 30_000;
export const PING_TIMEOUT_MS = 15_000;

/** How long a new connection may take to be ready: client-go's dial timeout (30 s) and TLS handshake (10 s). */
export const CONNECT_TIMEOUT_MS = 40_000;

/**
 * The streams a connection is given before the API server has said how many it allows: the number Go's client
 * assumes (golang.org/x/net/http2 initialMaxConcurrentStreams), and kube-apiserver's default.
 */
export const PROVISIONAL_MAX_STREAMS = 100;

/** Whether and how watches use HTTP/2. */
export interface Http2Settings {
  /** Watches stay on HTTP/1.1 (client-go: DISABLE_HTTP2 set to anything). */
  disabled?: boolean;
  /** A connection nothing was read from for this long is pinged; 0 or less: never (client-go's 0). */
  readIdleTimeoutMs?: number;
  /** How long a PING may go unanswered before its connection is closed. */
  pingTimeoutMs?: number;
}

/** Go's strconv.Atoi, for the environment variables client-go reads: an optional sign and decimal digits. */
function atoi(text: string | undefined): number | undefined {
  if (text === undefined || text === "" || !/^[+-]?\d+$/.test(text)) return undefined;
  return Number(text);
}

/**
 * The HTTP/2 settings kubectl (client-go) takes from its environment: DISABLE_HTTP2 (any non-empty value),
 * HTTP2_READ_IDLE_TIMEOUT_SECONDS (0 turns the PINGs off) and HTTP2_PING_TIMEOUT_SECONDS (0 means its default,
 * as in Go's transport). A value that is not an integer is ignored for the default, as client-go does (it
 * logs a warning).
 */
export function http2FromEnv(env: Record<string, string | undefined>): Required<Http2Settings> {
  const readIdle = atoi(env["HTTP2_READ_IDLE_TIMEOUT_SECONDS"]);
  const ping = atoi(env["HTTP2_PING_TIMEOUT_SECONDS"]);
  return {
    disabled: (env["DISABLE_HTTP2"] ?? "") !== "",
    readIdleTimeoutMs: readIdle === undefined ? READ_IDLE_TIMEOUT_MS : readIdle * 1000,
    pingTimeoutMs: ping === undefined || ping === 0 ? PING_TIMEOUT_MS : ping * 1000,
  };
}

/** A connection as {@link withRoom} weighs it. */
export interface Room {
  /** Streams open on it, or promised to watches waiting for it to be ready. */
  streams: number;
  /** The streams the server allows (provisional until its SETTINGS arrive). */
  maxStreams: number;
  /** Takes no new stream: the server sent GOAWAY, the pool was retired, or the connection is closing. */
  draining: boolean;
}

/** The connection a new watch goes on: the first that takes streams and has room for one more, if any. */
export function withRoom<C extends Room>(connections: Iterable<C>): C | undefined {
  for (const connection of connections) {
    if (!connection.draining && connection.streams < connection.maxStreams) return connection;
  }
  return undefined;
}

/** What of a session {@link keepChecked} uses; a ClientHttp2Session has all of it. */
export interface Pingable {
  readonly destroyed: boolean;
  /** Emits "timeout" once nothing was read or written for `ms` (Node: the session's own activity timer). */
  setTimeout(ms: number): void;
  on(event: "timeout", listener: () => void): unknown;
  ping(callback: (err: Error | null) => void): boolean;
  close(): void;
  destroy(err?: Error): void;
}

/** An unanswered PING: the connection is taken for dead. */
export class PingTimeoutError extends Error {
  readonly code = "ETIMEDOUT";
  constructor(server: string, ms: number) {
    super(`${server}: no answer to an HTTP/2 PING in ${ms} ms; the connection is closed`);
    this.name = "PingTimeoutError";
  }
}

/**
 * Checks `session` as client-go checks its connections: once nothing has been read for `readIdleTimeoutMs`, a
 * PING; no answer within `pingTimeoutMs` destroys the session (its streams end with a {@link PingTimeoutError}).
 * Node's session timer counts what is read and what the session writes except PINGs, so for a connection that
 * only receives watch events it measures the silence, as client-go's read-idle timer does. A session without
 * streams is closed instead once it has been idle that long (or, with PINGs off, {@link READ_IDLE_TIMEOUT_MS}).
 */
export function keepChecked(
  session: Pingable,
  server: string,
  settings: { readIdleTimeoutMs: number; pingTimeoutMs: number },
  streams: () => number,
): void {
  const pinging = settings.readIdleTimeoutMs > 0;
  const idleMs = pinging ? settings.readIdleTimeoutMs : READ_IDLE_TIMEOUT_MS;
  let unanswered: NodeJS.Timeout | undefined;
  session.on("timeout", () => {
    if (session.destroyed || unanswered !== undefined) return;
    if (streams() === 0) {
      session.close();
      return;
    }
    if (!pinging) {
      session.setTimeout(idleMs);
      return;
    }
    unanswered = setTimeout(
      () => session.destroy(new PingTimeoutError(server, settings.pingTimeoutMs)),
      settings.pingTimeoutMs,
    );
    unanswered.unref();
    session.ping((err) => {
      clearTimeout(unanswered);
      unanswered = undefined;
      // An answer is not activity to Node's timer: set it again, or the next silence would go unchecked.
      if (err === null && !session.destroyed) session.setTimeout(idleMs);
    });
  });
  session.setTimeout(idleMs);
}

/** TLS to the API server: the pool's secure context (its roots and client certificate) and how it is checked. */
export interface Http2Tls {
  secureContext: SecureContext;
  rejectUnauthorized: boolean;
  servername?: string;
}

interface Connection extends Room {
  /** Streams sent on the session and not yet closed. */
  active: number;
  /** The session once the server's SETTINGS are in; "http/1.1" when the server did not choose h2. */
  ready: Promise<ClientHttp2Session | "http/1.1">;
  session: ClientHttp2Session | undefined;
  /** Until the session is ready: ends the connection being made. */
  cancel: (err: Error) => void;
}

/**
 * The HTTP/2 connections of one pool (one API server, one client certificate): watches share them as
 * {@link withRoom} says, each connection {@link keepChecked}. When the server does not choose h2 (ALPN: an API
 * server or a proxy in front of it that speaks only HTTP/1.1), {@link open} says so, and the pool sends no
 * watch over HTTP/2 again.
 */
export class Http2Watches {
  readonly #origin: string;
  readonly #host: string;
  readonly #port: number;
  readonly #tls: Http2Tls;
  readonly #settings: { readIdleTimeoutMs: number; pingTimeoutMs: number };
  readonly #connections = new Set<Connection>();
  #http1 = false;
  #retired = false;

  constructor(server: string, tls: Http2Tls, settings: { readIdleTimeoutMs: number; pingTimeoutMs: number }) {
    const url = new URL(server);
    this.#origin = url.origin;
    this.#host = url.hostname.replace(/^\[|\]$/g, "");
    this.#port = url.port === "" ? 443 : Number(url.port);
    this.#tls = tls;
    this.#settings = settings;
  }

  /** Whether a connection of the pool is open or being made. */
  get connected(): boolean {
    return this.#connections.size > 0;
  }

  /**
   * Sends a watch request (GET `target` with `headers`) and resolves with its answer once its headers are in,
   * or with undefined when the server speaks only HTTP/1.1 (nothing was sent: send it that way). `beforeSend` is
   * told just before the request goes out. The signal ends the request.
   */
  async open(
    target: string,
    headers: Record<string, string>,
    signal: AbortSignal,
    beforeSend: () => void = () => undefined,
  ): Promise<OpenedWatch | undefined> {
    if (this.#http1) return undefined;
    signal.throwIfAborted();
    // A session closed (idle) or destroyed (an unanswered PING) leaves the pool only at its "close" event.
    const usable = [...this.#connections].filter(
      (c) => c.session === undefined || !(c.session.closed || c.session.destroyed),
    );
    const connection = withRoom(usable) ?? this.#connect();
    connection.streams++;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      connection.streams--;
      if (connection.streams === 0) {
        if (connection.draining) connection.session?.close();
        // An idle connection does not keep the process alive; it is closed once idle for a while (keepChecked).
        else connection.session?.unref();
      }
    };
    try {
      const session = await connection.ready;
      if (session === "http/1.1") {
        release();
        return undefined;
      }
      signal.throwIfAborted();
      if (connection.active >= connection.maxStreams) {
        // Promised before the server said how many streams it allows, and past that number: another connection.
        release();
        return await this.open(target, headers, signal, beforeSend);
      }
      connection.active++;
      session.ref();
      beforeSend();
      const stream = session.request(
        { ":method": "GET", ":path": target, ...lowerCased(headers) },
        { endStream: true, signal },
      );
      stream.once("close", () => {
        connection.active--;
        release();
      });
      // Its error reaches whoever reads the body; until then (and after) it must not end the process.
      stream.on("error", () => undefined);
      const answer = await response(stream);
      const status = Number(answer[":status"] ?? 0);
      const statusText = STATUS_CODES[status] ?? "";
      if (status === 200) return { status, statusText, body: stream };
      // A refusal's Status is read here, at once: `for await` over an HTTP/2 stream whose end had arrived before
      // the loop began fails with "Premature close" (Node 24), and the caller may await something first.
      return { status, statusText, body: Readable.from([await bodyOf(stream)]) };
    } catch (err) {
      release();
      throw err;
    }
  }

  /**
   * Takes no new watch (the client certificate changed): each connection is closed once its watches have
   * ended, and keeps being checked until then.
   */
  retire(): void {
    this.#retired = true;
    for (const connection of this.#connections) {
      connection.draining = true;
      if (connection.streams === 0) connection.session?.close();
    }
  }

  /** Ends every connection now, and the watches on them. */
  destroy(): void {
    this.#retired = true;
    for (const connection of this.#connections) {
      connection.draining = true;
      connection.cancel(new Error(`${this.#origin}: the client was closed`));
      connection.session?.destroy();
    }
    this.#connections.clear();
  }

  #connect(): Connection {
    let cancel: (err: Error) => void = () => undefined;
    const ready = new Promise<ClientHttp2Session | "http/1.1">((resolve, reject) => {
      const socket = nodeTls.connect({
        host: this.#host,
        port: this.#port,
        // SNI as https.Agent sends it: the kubeconfig's tls-server-name, else the host unless it is an address.
        ...(this.#tls.servername !== undefined
          ? { servername: this.#tls.servername }
          : nodeNet.isIP(this.#host) === 0
            ? { servername: this.#host }
            : {}),
        secureContext: this.#tls.secureContext,
        rejectUnauthorized: this.#tls.rejectUnauthorized,
        ALPNProtocols: ["h2", "http/1.1"],
      });
      let session: ClientHttp2Session | undefined;
      const fail = (err: Error): void => {
        clearTimeout(timer);
        socket.destroy();
        session?.destroy();
        reject(err);
      };
      cancel = fail;
      const timer = setTimeout(() => {
        fail(
          Object.assign(new Error(`${this.#origin}: not connected in ${CONNECT_TIMEOUT_MS} ms`), { code: "ETIMEDOUT" }),
        );
      }, CONNECT_TIMEOUT_MS);
      timer.unref();
      socket.once("error", fail);
      socket.once("secureConnect", () => {
        if (socket.alpnProtocol !== "h2") {
          clearTimeout(timer);
          socket.destroy();
          this.#http1 = true;
          resolve("http/1.1");
          return;
        }
        socket.off("error", fail);
        session = process.getBuiltinModule("node:http2").connect(this.#origin, {
          createConnection: () => socket,
          settings: { enablePush: false },
        });
        const opened = session;
        // Its streams are ended with the error, and their readers see it.
        opened.on("error", () => undefined);
        opened.once("error", fail);
        opened.once("close", () => {
          connection.draining = true;
          this.#connections.delete(connection);
          // Rejects only a connection not yet ready; once it is, its streams have ended with it.
          fail(new Error(`${this.#origin}: the connection closed before it was ready`));
        });
        opened.on("goaway", () => {
          connection.draining = true;
        });
        opened.on("remoteSettings", (settings: Settings) => {
          // At least one: a connection that allows none would send every watch to yet another such connection.
          connection.maxStreams = Math.max(1, settings.maxConcurrentStreams ?? PROVISIONAL_MAX_STREAMS);
        });
        opened.once("remoteSettings", () => {
          clearTimeout(timer);
          opened.off("error", fail);
          cancel = () => undefined;
          connection.session = opened;
          keepChecked(opened, this.#origin, this.#settings, () => connection.streams);
          if (connection.draining && connection.streams === 0) opened.close();
          resolve(opened);
        });
      });
    });
    const connection: Connection = {
      streams: 0,
      active: 0,
      maxStreams: PROVISIONAL_MAX_STREAMS,
      draining: this.#retired,
      session: undefined,
      cancel: (err) => cancel(err),
      ready,
    };
    ready.then(
      (outcome) => {
        if (outcome === "http/1.1") this.#connections.delete(connection);
      },
      () => this.#connections.delete(connection),
    );
    this.#connections.add(connection);
    return connection;
  }
}

/** HTTP/2 header names are lower case. */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

/** The whole body of `stream`: what arrived before it ended or closed. */
function bodyOf(stream: ClientHttp2Stream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.once("end", () => resolve(Buffer.concat(chunks)));
    stream.once("close", () => resolve(Buffer.concat(chunks)));
    stream.once("error", reject);
  });
}

/** The response headers of `stream`, or its error; a stream closed before it was answered is an error too. */
function response(stream: ClientHttp2Stream): Promise<IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    stream.once("response", resolve);
    stream.once("error", reject);
    stream.once("close", () => reject(Object.assign(new Error("the watch closed unanswered"), { code: "ECONNRESET" })));
  });
}
