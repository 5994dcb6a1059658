/** The overview: every app, its phase, its step bar and its weights, each linking to its page. */
import type { AppSummary } from "../model.js";
import { phaseClass } from "./format.js";
import { appLink } from "../links.js";
import { StepBar, Weights } from "./steps.js";

export function Overview({ apps }: { apps: AppSummary[] }) {
  if (apps.length === 0) return <p class="empty">No CanaryApps here (yet).</p>;
  const moving = apps.filter((a) => a.canary !== undefined).length;
  return (
    <table class="apps">
      <caption>
        {apps.length} {apps.length === 1 ? "app" : "apps"}, {moving} testing an image
      </caption>
      <thead>
        <tr>
          <th scope="col">App</th>
          <th scope="col">Phase</th>
          <th scope="col">Steps</th>
          <th scope="col">Weights</th>
          <th scope="col">Image</th>
        </tr>
      </thead>
      <tbody>
        {apps.map((app) => (
          <tr key={app.key} data-app={app.key}>
            <th scope="row">
              <a href={appLink(app.key)}>
                <span class="ns">{app.namespace}/</span>
                {app.name}
              </a>
            </th>
            <td>
              <span class={`phase ${phaseClass(app.phase)}`}>{app.phase}</span>
            </td>
            <td>
              <StepBar app={app} />
            </td>
            <td>
              <Weights app={app} />
            </td>
            <td class="image">
              {app.canary !== undefined ? (
                <>
                  <span title="under test">{app.canary.image}</span>
                  <br />
                  <span class="muted">primary {app.primaryImage ?? "-"}</span>
                </>
              ) : app.primaryImage !== undefined && app.primaryImage !== app.image ? (
                <>
                  <span title="spec.image">{app.image}</span>
                  {app.phase === "Failed" ? <strong class="bad-text"> failed</strong> : null}
                  <br />
                  <span class="muted">primary {app.primaryImage}</span>
                </>
              ) : (
                app.image
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
