/**
 * The dashboard's HTTP server: the page (bundled at build time into ./page/), one event stream per open page
 * (/api/stream, server-sent events), and the controls (POST /api/apps/NAMESPACE/NAME/CONTROL).
 *
 * Changes from the watches are gathered for a short while and then sent once to every stream: a burst of
 * status writes (status, then weights, then Events) costs one message per page, and a page of the overview gets
 * only the summaries of the apps that changed.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import type { KubeClients } from "../kube/client.js";
import { statusCodeOf, toError } from "../kube/errors.js";
import { runControl } from "../cli/kube.js";
import { controlVerb } from "../cli/controls.js";
import { allowedHosts, refusal } from "./guard.js";
import type { ControlName, ControlRequest, Hello, StreamMessages } from "./model.js";
import { EventStream } from "./sse.js";
import type { DashboardReader } from "./source.js";
import { detailOf, summarize } from "./view-model.js";

const CONTROLS: readonly ControlName[] = ["promote", "abort", "retry", "pause", "resume", "approve"];

/** The files of the page, by the path the browser asks for. */
const ASSETS: Record<string, { file: string; type: string }> = {
  "/assets/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/assets/app.css": { file: "app.css", type: "text/css; charset=utf-8" },
  "/assets/licenses.txt": { file: "licenses.txt", type: "text/plain; charset=utf-8" },
};

/** How long changes are gathered before they are sent. */
export const FLUSH_MS = 150;

export interface DashboardServerOptions {
  source: DashboardReader;
  clients: KubeClients;
  readOnly: boolean;
  /** What the page's header says it shows, e.g. `namespace shop`. */
  scope: string;
  context: string;
  /** Where the bundled page is (default: ./page/ beside this file). */
  pageDir?: URL;
}

/** One open page. */
interface Client {
  stream: EventStream;
  /** The app the page shows, `namespace/name`; undefined on the overview. */
  app: string | undefined;
}

type Send = <K extends keyof StreamMessages>(stream: EventStream, event: K, data: StreamMessages[K]) => void;
const send: Send = (stream, event, data) => stream.send(event, data);

export class DashboardServer {
  private readonly server: Server;
  private readonly clients = new Set<Client>();
  private readonly pending = new Set<string>();
  private problemsChanged = false;
  private timer: NodeJS.Timeout | undefined;
  private wasSynced = false;
  private hosts: Set<string> | undefined = new Set<string>();
  private readonly pageDir: URL;

  constructor(private readonly options: DashboardServerOptions) {
    this.pageDir = options.pageDir ?? new URL("./page/", import.meta.url);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) this.json(res, 500, { message: toError(error).message });
        else res.end();
      });
    });
    options.source.onChange((change) => {
      for (const key of change.apps) this.pending.add(key);
      if (change.problems) this.problemsChanged = true;
      this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
    });
  }

  /** Listens on `host:port` (port 0: any free one); resolves with the page's URL. */
  async listen(host: string, port: number): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => resolve());
    });
    const address = this.server.address() as AddressInfo;
    const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
    this.hosts = allowedHosts(host === "localhost" ? "localhost" : shown, address.port);
    return `http://${host === "localhost" ? "localhost" : shown}:${address.port}/`;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    for (const client of this.clients) client.stream.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://dashboard.invalid");
    const control = /^\/api\/apps\/([^/]+)\/([^/]+)\/([a-z]+)$/.exec(url.pathname);
    const refused = refusal(
      {
        method: req.method ?? "GET",
        host: req.headers.host,
        origin: req.headers.origin,
        contentType: req.headers["content-type"],
      },
      this.hosts,
      control !== null,
    );
    if (refused !== undefined) {
      this.json(res, refused.status, { message: refused.message });
      return;
    }
    if (control !== null) {
      const [, namespace = "", name = "", verb = ""] = control;
      await this.control(req, res, decodeURIComponent(namespace), decodeURIComponent(name), verb);
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      this.json(res, 405, { message: `${req.method ?? ""} is not served here` });
      return;
    }
    if (url.pathname === "/api/stream") {
      this.openStream(req, res, url.searchParams.get("app") ?? undefined);
      return;
    }
    const asset = ASSETS[url.pathname];
    if (asset !== undefined) {
      const body = await readFile(new URL(asset.file, this.pageDir));
      res.writeHead(200, { "Content-Type": asset.type, "Cache-Control": "no-cache" });
      res.end(body);
      return;
    }
    // The page itself, for / and any app's deep link (/app/NAMESPACE/NAME).
    if (url.pathname === "/" || url.pathname.startsWith("/app/")) {
      const body = await readFile(new URL("index.html", this.pageDir));
      res.writeHead(200, {
        "Content-Type": "text/html; charset=utf-8",
        "Cache-Control": "no-cache",
        // Everything the page loads is its own: no CDN, no inline script.
        "Content-Security-Policy":
          "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'",
      });
      res.end(body);
      return;
    }
    this.json(res, 404, { message: `${url.pathname} not found` });
  }

  private openStream(req: IncomingMessage, res: ServerResponse, app: string | undefined): void {
    const client: Client = { stream: new EventStream(res, () => this.clients.delete(client)), app };
    this.clients.add(client);
    req.socket.setNoDelay(true);
    const { source, readOnly, scope, context } = this.options;
    const hello: Hello = { readOnly, scope, context };
    send(client.stream, "hello", hello);
    send(client.stream, "status", { synced: source.synced(), problems: source.problemList() });
    // Before the first list is in, "no such app" would be a guess: the detail follows with the list.
    if (source.apps.hasSynced()) {
      send(client.stream, "apps", source.apps.list().map(summarize));
      if (app !== undefined) send(client.stream, "detail", this.detail(app));
    }
  }

  private detail(key: string): StreamMessages["detail"] {
    const { source } = this.options;
    const app = source.app(key);
    return app === undefined ? null : detailOf(app, source.eventsOf(key), source.historyOf(key));
  }

  /** Sends what changed since the last flush to every open page. */
  private flush(): void {
    this.timer = undefined;
    const { source } = this.options;
    const keys = [...this.pending];
    this.pending.clear();
    // The apps' first list is what the pages wait for; the Events' may come later (or be forbidden).
    const appsSynced = source.apps.hasSynced();
    const becameSynced = appsSynced && !this.wasSynced;
    this.wasSynced = appsSynced;
    const synced = source.synced();
    const problems = this.problemsChanged || becameSynced;
    this.problemsChanged = false;
    if (this.clients.size === 0) return;

    const changed = keys.flatMap((key) => {
      const app = source.app(key);
      return app === undefined ? [] : [summarize(app)];
    });
    const removed = keys.filter((key) => source.app(key) === undefined);
    const all = becameSynced ? source.apps.list().map(summarize) : undefined;
    const details = new Map<string, StreamMessages["detail"]>();
    for (const client of this.clients) {
      if (problems) send(client.stream, "status", { synced, problems: source.problemList() });
      if (all !== undefined) send(client.stream, "apps", all);
      else if (appsSynced) {
        if (changed.length > 0) send(client.stream, "changed", changed);
        if (removed.length > 0) send(client.stream, "removed", removed);
      }
      if (client.app !== undefined && appsSynced && (becameSynced || keys.includes(client.app))) {
        const key = client.app;
        if (!details.has(key)) details.set(key, this.detail(key));
        send(client.stream, "detail", details.get(key) ?? null);
      }
    }
  }

  private async control(
    req: IncomingMessage,
    res: ServerResponse,
    namespace: string,
    name: string,
    verb: string,
  ): Promise<void> {
    if (this.options.readOnly) {
      this.json(res, 403, { message: "the dashboard is read-only (--read-only): controls are refused" });
      return;
    }
    const control = CONTROLS.find((c) => c === verb);
    if (control === undefined) {
      this.json(res, 404, { message: `no control "${verb}": one of ${CONTROLS.join(", ")}` });
      return;
    }
    let body: ControlRequest;
    try {
      body = (JSON.parse((await readBody(req)) || "{}") ?? {}) as ControlRequest;
    } catch {
      this.json(res, 400, { message: "the body is not JSON" });
      return;
    }
    const image = control === "retry" && typeof body.image === "string" && body.image !== "" ? body.image : undefined;
    try {
      await runControl(this.options.clients, namespace, name, control, image);
      this.json(res, 200, { message: `canaryapp.canaryapp.io/${name} ${controlVerb(control)}` });
    } catch (error) {
      const code = statusCodeOf(error);
      this.json(res, code !== undefined && code >= 400 && code < 600 ? code : 502, {
        message: toError(error).message,
      });
    }
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store" });
    res.end(JSON.stringify(body));
  }
}

/** A request's body, at most 64 KiB. */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > 65_536) {
        reject(new Error("body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
