import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { CanaryApp } from "../api/types.js";
import type { KubeClients } from "../kube/client.js";
import { DashboardServer, FLUSH_MS } from "./server.js";
import type { Change, DashboardReader } from "./source.js";

function app(name: string, phase: "Healthy" | "Progressing"): CanaryApp {
  return {
    metadata: { name, namespace: "shop" },
    spec: { image: `registry.example.com/${name}:v2`, imageListenPort: 8080 },
    status: { phase, weights: { primary: 100, secondary: 0 } },
  };
}

/** A source whose apps the test sets, telling the server as the watches would. */
class FakeSource implements DashboardReader {
  readonly store = new Map<string, CanaryApp>([["shop/web", app("web", "Healthy")]]);
  private readonly listeners: ((change: Change) => void)[] = [];
  apps = { hasSynced: () => true, list: () => [...this.store.values()] };
  onChange(listener: (change: Change) => void): void {
    this.listeners.push(listener);
  }
  tell(change: Change): void {
    for (const listener of this.listeners) listener(change);
  }
  set(a: CanaryApp): void {
    this.store.set(`shop/${a.metadata.name ?? ""}`, a);
    this.tell({ apps: new Set([`shop/${a.metadata.name ?? ""}`]), problems: false });
  }
  synced = () => true;
  problemList = () => [];
  app = (key: string) => this.store.get(key);
  eventsOf = () => [];
  historyOf = () => ({ weights: [], analyses: [] });
}

/** Reads server-sent events from a response until `until` says stop. */
async function readEvents(
  response: Response,
  until: (events: { event: string; data: unknown }[]) => boolean,
): Promise<{ event: string; data: unknown }[]> {
  const events: { event: string; data: unknown }[] = [];
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of response.body ?? []) {
    text += decoder.decode(chunk as Uint8Array, { stream: true });
    let end: number;
    while ((end = text.indexOf("\n\n")) >= 0) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = [...block.matchAll(/^data: (.*)$/gm)].map((m) => m[1]).join("\n");
      if (event !== undefined) events.push({ event, data: JSON.parse(data) as unknown });
    }
    if (until(events)) break;
  }
  return events;
}

describe("the dashboard's server", () => {
  const source = new FakeSource();
  const patches: unknown[] = [];
  const clients = {
    customObjects: {
      getNamespacedCustomObject: () => Promise.resolve(source.store.get("shop/web")),
      patchNamespacedCustomObject: (request: { body: unknown }) => {
        patches.push(request.body);
        return Promise.resolve(source.store.get("shop/web"));
      },
    },
  } as unknown as KubeClients;
  const pageDir = new URL("./page/", import.meta.url);
  const server = new DashboardServer({
    source,
    clients,
    readOnly: false,
    scope: "namespace shop",
    context: "test",
    pageDir,
  });
  const readOnly = new DashboardServer({
    source,
    clients,
    readOnly: true,
    scope: "namespace shop",
    context: "test",
    pageDir,
  });
  let url = "";
  let readOnlyUrl = "";
  before(async () => {
    url = await server.listen("127.0.0.1", 0);
    readOnlyUrl = await readOnly.listen("127.0.0.1", 0);
    // The first list is in (as the informers' onSynced tells it): what follows is a change.
    source.tell({ apps: new Set(), problems: true });
    await sleep(2 * FLUSH_MS);
  });
  after(async () => {
    await server.close();
    await readOnly.close();
  });

  test("a stream starts with hello, status, every app and the detail asked for, then sends what changes", async () => {
    const response = await fetch(new URL("api/stream?app=shop/web", url));
    assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
    let changed = false;
    const events = await readEvents(response, (seen) => {
      if (!changed && seen.some((e) => e.event === "detail")) {
        changed = true;
        source.set(app("web", "Progressing"));
        source.set(app("api", "Progressing"));
      }
      return seen.filter((e) => e.event === "detail").length >= 2;
    });
    assert.deepEqual(
      events.map((e) => e.event),
      ["hello", "status", "apps", "detail", "changed", "detail"],
      "both changes in one message: they came within the flush interval",
    );
    assert.deepEqual(events[0]?.data, { readOnly: false, scope: "namespace shop", context: "test" });
    assert.deepEqual(
      (events[4]?.data as { key: string; phase: string }[]).map((a) => `${a.key} ${a.phase}`),
      ["shop/web Progressing", "shop/api Progressing"],
    );
    assert.equal((events[5]?.data as { phase: string }).phase, "Progressing");
  });

  test("the page, for / and an app's path, and its files: nothing from elsewhere", async () => {
    for (const path of ["", "app/shop/web"]) {
      const page = await fetch(new URL(path, url));
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-security-policy") ?? "", /default-src 'self'; script-src 'self'/);
      const html = await page.text();
      assert.match(html, /<script type="module" src="\/assets\/app.js"><\/script>/);
      assert.doesNotMatch(html, /https?:\/\//, "no CDN");
    }
    for (const [path, type] of [
      ["assets/app.js", "text/javascript"],
      ["assets/app.css", "text/css"],
      ["assets/licenses.txt", "text/plain"],
    ] as const) {
      const file = await fetch(new URL(path, url));
      assert.equal(file.status, 200, path);
      assert.ok(file.headers.get("content-type")?.startsWith(type), path);
    }
    assert.match(await (await fetch(new URL("assets/licenses.txt", url))).text(), /^preact .*MIT[\s\S]*^uplot /m);
    assert.equal((await fetch(new URL("assets/../../server.js", url))).status, 404);
  });

  test("a control writes the plugin's annotation", async () => {
    const response = await fetch(new URL("api/apps/shop/web/promote", url), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: "{}",
    });
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { message: "canaryapp.canaryapp.io/web promoted" });
    assert.deepEqual(patches.at(-1), { metadata: { annotations: { "canaryapp.io/promote": "now" } } });
  });

  test("refused: read-only, an unknown control, another Host", async () => {
    const post = (base: string, control: string) =>
      fetch(new URL(`api/apps/shop/web/${control}`, base), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: "{}",
      });
    const count = patches.length;
    assert.equal((await post(readOnlyUrl, "promote")).status, 403);
    assert.equal((await post(url, "delete")).status, 404);
    assert.equal(patches.length, count, "nothing written");
    const { request } = await import("node:http");
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const target = new URL(url);
      request({ host: target.hostname, port: target.port, path: "/", headers: { Host: "evil.example" } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      })
        .on("error", reject)
        .end();
    });
    assert.equal(status, 421);
  });
});
