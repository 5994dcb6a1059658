/**
 * The page's side of the event stream (/api/stream): the state it builds from the server's messages. The
 * browser's EventSource reconnects by itself; the server then sends everything again.
 */
import { useEffect, useState } from "preact/hooks";
import type { AppDetail, AppSummary, Hello, StreamMessages } from "../model.js";

export interface StreamState {
  connected: boolean;
  hello: Hello | undefined;
  /** By key; undefined until the first `apps`. */
  apps: Map<string, AppSummary> | undefined;
  /** The app asked for: undefined until sent, null when it does not exist. */
  detail: AppDetail | null | undefined;
  status: StreamMessages["status"];
}

const INITIAL: StreamState = {
  connected: false,
  hello: undefined,
  apps: undefined,
  detail: undefined,
  status: { synced: false, problems: [] },
};

function parse<K extends keyof StreamMessages>(event: Event): StreamMessages[K] {
  return JSON.parse((event as MessageEvent<string>).data) as StreamMessages[K];
}

/** Follows the stream for the overview, and for `app` when one is shown. */
export function useStream(app: string | undefined): StreamState {
  const [state, setState] = useState<StreamState>(INITIAL);
  useEffect(() => {
    setState((s) => ({ ...s, detail: undefined }));
    const source = new EventSource(app === undefined ? "/api/stream" : `/api/stream?app=${encodeURIComponent(app)}`);
    const on = <K extends keyof StreamMessages>(
      name: K,
      apply: (s: StreamState, data: StreamMessages[K]) => StreamState,
    ) =>
      source.addEventListener(name, (event) => {
        const data = parse<K>(event);
        setState((s) => apply(s, data));
      });
    source.onopen = () => setState((s) => ({ ...s, connected: true }));
    source.onerror = () => setState((s) => ({ ...s, connected: false }));
    on("hello", (s, hello) => ({ ...s, hello }));
    on("status", (s, status) => ({ ...s, status }));
    on("apps", (s, apps) => ({ ...s, apps: new Map(apps.map((a) => [a.key, a])) }));
    on("changed", (s, changed) => {
      const apps = new Map(s.apps);
      for (const a of changed) apps.set(a.key, a);
      return { ...s, apps };
    });
    on("removed", (s, removed) => {
      const apps = new Map(s.apps);
      for (const key of removed) apps.delete(key);
      return { ...s, apps };
    });
    on("detail", (s, detail) => ({ ...s, detail }));
    return () => source.close();
  }, [app]);
  return state;
}
