/** The step bar: each step of the test, done, current or to come; and the weights now. */
import type { AppSummary } from "../model.js";

export function StepBar({ app }: { app: AppSummary }) {
  if (app.steps.length === 0) return <span class="muted">{app.progress || "no test running"}</span>;
  return (
    <div class="steps-wrap">
      <ol class="steps" aria-label={`Steps of ${app.name}: ${app.progress}`}>
        {app.steps.map((step, i) => (
          <li
            key={i}
            class={`step ${step.state}`}
            aria-current={step.state === "current" ? "step" : undefined}
            title={`step ${i + 1}: ${step.label} (${step.state})`}
          >
            <span class="visually-hidden">
              step {i + 1}, {step.state}:{" "}
            </span>
            {step.label}
          </li>
        ))}
      </ol>
      <span class="progress">{app.progress}</span>
    </div>
  );
}

export function Weights({ app }: { app: AppSummary }) {
  const w = app.weights;
  if (w === undefined) return <span class="muted">-</span>;
  return (
    <span class="weights" data-testid="weights">
      <span class="weight primary">primary {w.primary}%</span>{" "}
      <span class="weight secondary">secondary {w.secondary}%</span>
      {w.mirror !== undefined ? <span class="weight"> mirror {w.mirror}%</span> : null}
      {w.match === true ? <span class="weight"> A/B</span> : null}
    </span>
  );
}
