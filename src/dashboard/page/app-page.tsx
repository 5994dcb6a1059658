/**
 * One app: its phase and steps, the weights over time (what the dashboard has seen, up to now), each metric of
 * the last analysis against its bounds and over the analyses seen, gates, batches and approvals, failed images
 * with reason, metric, value and query, and its recent Events.
 */
import { useMemo } from "preact/hooks";
import type { AppDetail, MetricView } from "../model.js";
import { Chart, type Line } from "./chart.js";
import { Controls } from "./controls.js";
import { ago, num, phaseClass } from "./format.js";
import { StepBar, Weights } from "./steps.js";

function bounds(m: MetricView): string {
  if (m.rule !== undefined) return m.rule;
  const parts = [m.min !== undefined ? `≥ ${num(m.min)}` : "", m.max !== undefined ? `≤ ${num(m.max)}` : ""];
  return parts.filter((p) => p !== "").join(", ") || "-";
}

function WeightChart({ app, now }: { app: AppDetail; now: number }) {
  const { times, lines } = useMemo(() => {
    const points = [...app.weightHistory];
    const last = points[points.length - 1];
    // The weights hold until now: the last point is carried to the present.
    if (last !== undefined) points.push({ ...last, t: Math.max(now, last.t) });
    const times = points.map((p) => p.t / 1000);
    const lines: Line[] = [
      { label: "secondary %", color: "#b3261e", values: points.map((p) => p.secondary), stepped: true },
      { label: "primary %", color: "#1f5fa8", values: points.map((p) => p.primary), stepped: true, dash: [6, 4] },
    ];
    return { times, lines };
  }, [app.weightHistory, now]);
  if (app.weightHistory.length === 0) return <p class="muted">No weights seen yet.</p>;
  return <Chart title={`Weights of ${app.name} over time`} times={times} lines={lines} yLabel="%" yRange={[0, 100]} />;
}

function MetricChart({ app, metric }: { app: AppDetail; metric: MetricView }) {
  const { times, lines } = useMemo(() => {
    const points = app.analysisHistory.filter((p) => metric.name in p.values);
    const times = points.map((p) => p.t / 1000);
    const lines: Line[] = [
      { label: metric.name, color: "#1f5fa8", values: points.map((p) => p.values[metric.name] ?? null) },
    ];
    if (metric.max !== undefined)
      lines.push({ label: "max", color: "#b3261e", values: points.map(() => metric.max ?? null), dash: [4, 4] });
    if (metric.min !== undefined)
      lines.push({ label: "min", color: "#8a5a00", values: points.map(() => metric.min ?? null), dash: [4, 4] });
    return { times, lines };
  }, [app.analysisHistory, metric.name, metric.max, metric.min]);
  if (times.length < 2) return null;
  return <Chart title={`${metric.name} per analysis`} times={times} lines={lines} yLabel={metric.name} height={140} />;
}

/** The figures of the judged metrics (ADR 0030): each track's median and samples, the shift, p against α. */
function JudgedMetrics({ metrics }: { metrics: MetricView[] }) {
  const judged = metrics.filter((m) => m.kind === "judge" && m.figures !== undefined);
  if (judged.length === 0) return null;
  const f = (m: MetricView, name: string): string => num(m.figures?.[name]);
  return (
    <table class="metrics judged">
      <caption>Judged metrics: the secondary against the primary over the step</caption>
      <thead>
        <tr>
          <th scope="col">Metric</th>
          <th scope="col">Secondary median</th>
          <th scope="col">Primary median</th>
          <th scope="col">Shift [interval]</th>
          <th scope="col">p / α</th>
          <th scope="col">Samples</th>
          <th scope="col">Result</th>
        </tr>
      </thead>
      <tbody>
        {judged.map((m) => (
          <tr key={m.name} data-judged={m.name}>
            <th scope="row">{m.name}</th>
            <td>{f(m, "secondaryMedian")}</td>
            <td>{f(m, "primaryMedian")}</td>
            <td>
              {f(m, "shift")} [{f(m, "shiftLow")}, {f(m, "shiftHigh")}]
            </td>
            <td>
              {f(m, "p")} / {f(m, "alpha")}
            </td>
            <td>
              {f(m, "secondarySamples")} / {f(m, "primarySamples")}
            </td>
            <td class={m.passed ? "ok-text" : "bad-text"}>{m.passed ? "passed" : m.reason}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Analysis({ app, now }: { app: AppDetail; now: number }) {
  const analysis = app.analysis;
  if (analysis === undefined) return <p class="muted">No analysis in this test yet.</p>;
  return (
    <>
      <p>
        Last analysis <strong class={analysis.verdict === "Passed" ? "ok-text" : "bad-text"}>{analysis.verdict}</strong>
        , {ago(analysis.time, now)}.
      </p>
      <table class="metrics">
        <caption class="visually-hidden">Metrics of the last analysis</caption>
        <thead>
          <tr>
            <th scope="col">Metric</th>
            <th scope="col">Value</th>
            <th scope="col">Threshold</th>
            <th scope="col">Result</th>
            <th scope="col">Query</th>
          </tr>
        </thead>
        <tbody>
          {analysis.metrics.map((m) => (
            <tr key={m.name} data-metric={m.name}>
              <th scope="row">
                {m.name}
                {m.kind !== undefined ? <span class="muted"> ({m.kind})</span> : null}
              </th>
              <td>{num(m.value)}</td>
              <td>{bounds(m)}</td>
              <td class={m.passed ? "ok-text" : "bad-text"}>{m.passed ? "passed" : m.reason}</td>
              <td>
                <code>{m.query ?? "-"}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <JudgedMetrics metrics={analysis.metrics} />
      <div class="metric-charts">
        {analysis.metrics.map((m) => (
          <MetricChart key={m.name} app={app} metric={m} />
        ))}
      </div>
    </>
  );
}

export function AppPage({ app, readOnly, now }: { app: AppDetail; readOnly: boolean; now: number }) {
  return (
    <article class="app-page" aria-labelledby="app-title">
      <header class="app-head">
        <h1 id="app-title">
          <span class="ns">{app.namespace}/</span>
          {app.name}
        </h1>
        <span class={`phase ${phaseClass(app.phase)}`} data-testid="phase">
          {app.phase}
        </span>
      </header>
      {app.message !== undefined ? (
        <p class="message" data-testid="message">
          {app.message}
        </p>
      ) : null}
      <div class="grid">
        <section aria-labelledby="now-title">
          <h2 id="now-title">Now</h2>
          <dl class="facts">
            <dt>Image</dt>
            <dd>{app.image}</dd>
            <dt>Primary</dt>
            <dd>{app.primaryImage ?? "-"}</dd>
            {app.canary !== undefined ? (
              <>
                <dt>Under test</dt>
                <dd>
                  {app.canary.image} ({app.canary.stage}
                  {app.canary.paused ? ", paused" : ""}, started {ago(app.canary.startedAt, now)})
                </dd>
              </>
            ) : null}
            <dt>Weights</dt>
            <dd>
              <Weights app={app} />
            </dd>
            {app.outcome !== undefined ? (
              <>
                <dt>Outcome</dt>
                <dd>
                  {app.outcome.result}: {app.outcome.reason}, {app.outcome.message}
                </dd>
              </>
            ) : null}
          </dl>
          <StepBar app={app} />
          <Controls app={app} readOnly={readOnly} />
        </section>
        <section aria-labelledby="weights-title">
          <h2 id="weights-title">Weights over time</h2>
          <WeightChart app={app} now={now} />
        </section>
      </div>
      <section aria-labelledby="analysis-title">
        <h2 id="analysis-title">Analysis</h2>
        <Analysis app={app} now={now} />
      </section>
      {app.gates !== undefined ? (
        <section aria-labelledby="gates-title">
          <h2 id="gates-title">Gates</h2>
          <p>Passed: {app.gates.passed.length > 0 ? app.gates.passed.join(", ") : "none yet"}</p>
          {app.gates.waiting !== undefined ? (
            <p class="bad-text">
              Waiting at {app.gates.waiting.type} ({app.gates.waiting.name}) since {ago(app.gates.waiting.since, now)}:{" "}
              {app.gates.waiting.message}
            </p>
          ) : null}
        </section>
      ) : null}
      {app.batch !== undefined ? (
        <section aria-labelledby="batches-title">
          <h2 id="batches-title">Batches</h2>
          <p>{app.batch.summary}</p>
          <ol class="batches">
            {app.batch.batches.map((b) => (
              <li key={b.batch} class={`batch ${b.state}`}>
                batch {b.batch}: {b.replicas} new {b.replicas === 1 ? "replica" : "replicas"}, {b.state}
              </li>
            ))}
          </ol>
          {app.batch.approval !== undefined ? (
            <p class="held-text">
              Batch {app.batch.approval.batch} passed and waits for approval since {ago(app.batch.approval.since, now)}.
            </p>
          ) : null}
          {app.batch.rollback !== undefined ? (
            <p class="bad-text">
              Rollback {app.batch.rollback.state}
              {app.batch.rollback.reason !== undefined ? `: ${app.batch.rollback.reason}` : ""}
            </p>
          ) : null}
        </section>
      ) : null}
      <section aria-labelledby="failed-title">
        <h2 id="failed-title">Failed images</h2>
        {app.failedImages.length === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <table class="failed">
            <caption class="visually-hidden">Failed images, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Image</th>
                <th scope="col">Failed</th>
                <th scope="col">Reason</th>
                <th scope="col">Metric</th>
                <th scope="col">Value</th>
                <th scope="col">Query</th>
              </tr>
            </thead>
            <tbody>
              {app.failedImages.map((f) => (
                <tr key={`${f.image}@${f.failedAt}`} data-failed={f.image}>
                  <th scope="row">{f.image}</th>
                  <td>
                    <time dateTime={f.failedAt} title={f.failedAt}>
                      {ago(f.failedAt, now)}
                    </time>
                  </td>
                  <td title={f.message}>{f.reason}</td>
                  <td>{f.metric ?? "-"}</td>
                  <td>{f.value !== undefined ? num(f.value) : "-"}</td>
                  <td>
                    <code>{f.query ?? "-"}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {app.conditions.length > 0 ? (
        <section aria-labelledby="conditions-title">
          <h2 id="conditions-title">Conditions</h2>
          <ul class="conditions">
            {app.conditions.map((c) => (
              <li key={c.type}>
                <strong>{c.type}</strong> {c.status}: {c.reason}
                {c.message !== "" ? `, ${c.message}` : ""}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <section aria-labelledby="events-title">
        <h2 id="events-title">Recent Events</h2>
        {app.events.length === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <ol class="events" reversed>
            {[...app.events].reverse().map((e, i) => (
              <li key={`${e.time}-${i}`} class={e.type === "Warning" ? "warning" : ""}>
                <time dateTime={e.time}>{ago(e.time, now)}</time> <strong>{e.reason}</strong>
                {e.count > 1 ? ` (×${e.count})` : ""} {e.message}
              </li>
            ))}
          </ol>
        )}
      </section>
    </article>
  );
}
