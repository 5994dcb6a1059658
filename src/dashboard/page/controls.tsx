/**
 * The controls, each behind a confirmation dialog (a native modal <dialog>: focus moves into it, Escape
 * cancels). A control is a POST to the dashboard's server, which writes the plugin's annotation with the
 * user's rights; the answer (or the API server's refusal) is announced in a live region.
 */
import { useRef, useState } from "preact/hooks";
import type { AppSummary, ControlName } from "../model.js";

const WHAT: Record<ControlName, string> = {
  promote: "Promote the image under test now, skipping the remaining steps.",
  abort: "Abort the test and roll back to the primary now.",
  retry: "Test the failed image again.",
  pause: "Hold the test at its current step.",
  resume: "Continue the paused test.",
  approve: "Start the next batch of this batch release.",
};

/** What each control does to the CanaryApp (src/cli/controls.ts, the README's table). */
const ANNOTATION: Record<ControlName, string> = {
  promote: "It sets the annotation canaryapp.io/promote=now",
  abort: "It sets the annotation canaryapp.io/abort=now",
  retry: "It sets the annotation canaryapp.io/retry to the app's image",
  pause: "It sets the annotation canaryapp.io/paused=true",
  resume: "It removes the annotation canaryapp.io/paused",
  approve: "It sets the annotation canaryapp.io/approve=now",
};

async function post(app: AppSummary, control: ControlName): Promise<string> {
  const response = await fetch(
    `/api/apps/${encodeURIComponent(app.namespace)}/${encodeURIComponent(app.name)}/${control}`,
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({}) },
  );
  const body = (await response.json()) as { message?: string };
  if (!response.ok) throw new Error(body.message ?? `HTTP ${response.status}`);
  return body.message ?? "done";
}

export function Controls({ app, readOnly }: { app: AppSummary; readOnly: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [asked, setAsked] = useState<ControlName | undefined>(undefined);
  const [result, setResult] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  if (readOnly) return null;

  const ask = (control: ControlName) => {
    setAsked(control);
    dialog.current?.showModal();
  };
  const confirm = async () => {
    if (asked === undefined) return;
    setBusy(true);
    try {
      setResult({ ok: true, text: await post(app, asked) });
    } catch (error) {
      setResult({ ok: false, text: `${asked} failed: ${(error as Error).message}` });
    } finally {
      setBusy(false);
      dialog.current?.close();
    }
  };

  return (
    <section class="controls" aria-labelledby="controls-title">
      <h2 id="controls-title">Controls</h2>
      {app.controls.length === 0 ? <p class="muted">No control applies now.</p> : null}
      <div class="buttons">
        {app.controls.map((control) => (
          <button type="button" key={control} class={`control ${control}`} onClick={() => ask(control)}>
            {control[0]?.toUpperCase()}
            {control.slice(1)}
          </button>
        ))}
      </div>
      <p role="status" aria-live="polite" class={result === undefined ? "" : result.ok ? "result ok" : "result bad"}>
        {result?.text ?? ""}
      </p>
      <dialog
        ref={dialog}
        aria-labelledby="confirm-title"
        aria-describedby="confirm-text"
        onClose={() => setAsked(undefined)}
      >
        <form method="dialog">
          <h3 id="confirm-title">
            {asked ?? ""} {app.namespace}/{app.name}?
          </h3>
          <p id="confirm-text">
            {asked !== undefined ? `${WHAT[asked]} ${ANNOTATION[asked]}, with your kubeconfig's rights.` : ""}
          </p>
          <div class="buttons">
            <button type="button" class="confirm" disabled={busy} onClick={() => void confirm()}>
              Yes, {asked}
            </button>
            <button type="submit" value="cancel" autofocus>
              Cancel
            </button>
          </div>
        </form>
      </dialog>
    </section>
  );
}
