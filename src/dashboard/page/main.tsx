/** The dashboard's page: the overview, or one app by its deep link; everything live from /api/stream. */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { AppPage } from "./app-page.js";
import { Overview } from "./overview.js";
import { appOfLocation } from "../links.js";
import { useStream } from "./stream.js";
import "./styles.css";

function useLocationApp(): string | undefined {
  const [app, setApp] = useState(() => appOfLocation(window.location));
  useEffect(() => {
    const update = () => setApp(appOfLocation(window.location));
    window.addEventListener("hashchange", update);
    window.addEventListener("popstate", update);
    return () => {
      window.removeEventListener("hashchange", update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return app;
}

/** Ages move with the clock: a tick every few seconds redraws them (nothing is fetched). */
function useNow(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

function App() {
  const app = useLocationApp();
  const state = useStream(app);
  const now = useNow(5000);
  useEffect(() => {
    document.title = app === undefined ? "CanaryApps" : `${app} · CanaryApps`;
  }, [app]);
  const apps =
    state.apps === undefined ? undefined : [...state.apps.values()].sort((a, b) => a.key.localeCompare(b.key));
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <nav aria-label="Dashboard">
          <a href="#/" class="home">
            CanaryApps
          </a>
          {app !== undefined ? <span aria-hidden="true"> / </span> : null}
          {app !== undefined ? <span>{app}</span> : null}
        </nav>
        <p class="scope">
          {state.hello !== undefined
            ? `${state.hello.context} · ${state.hello.scope}${state.hello.readOnly ? " · read-only" : ""}`
            : ""}
          <span class={state.connected ? "live on" : "live off"} role="status">
            {state.connected ? "live" : "reconnecting…"}
          </span>
        </p>
      </header>
      <main id="main" tabIndex={-1}>
        {state.status.problems.length > 0 ? (
          <div class="problems" role="alert">
            <h2>Not everything can be shown</h2>
            <ul>
              {state.status.problems.map((p) => (
                <li key={p.resource}>
                  <strong>{p.resource}</strong>: {p.message}
                </li>
              ))}
            </ul>
          </div>
        ) : null}
        {app === undefined ? (
          apps === undefined ? (
            <p>Loading the CanaryApps…</p>
          ) : (
            <>
              <h1>CanaryApps</h1>
              <Overview apps={apps} />
            </>
          )
        ) : state.detail === undefined ? (
          <p>Loading {app}…</p>
        ) : state.detail === null ? (
          <p>
            There is no CanaryApp {app} that you may read. <a href="#/">Back to the overview</a>
          </p>
        ) : (
          <AppPage app={state.detail} readOnly={state.hello?.readOnly ?? true} now={now} />
        )}
      </main>
      <footer class="bottom">
        <a href="/assets/licenses.txt">Licenses of the libraries in this page</a>
      </footer>
    </>
  );
}

const root = document.getElementById("app");
if (root !== null) {
  root.textContent = "";
  render(<App />, root);
}
