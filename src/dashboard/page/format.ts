/** Small formatting helpers of the page. */

/** `5s`, `3m`, `2h`, `4d` ago. */
export function ago(time: string | number | undefined, now: number): string {
  if (time === undefined || time === "") return "";
  const ms = now - new Date(time).getTime();
  if (Number.isNaN(ms)) return "";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s}s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)}m ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

/** A number as the page shows it: up to 4 significant digits. */
export function num(value: number | undefined | null): string {
  if (value === undefined || value === null) return "no data";
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(4)));
}

/** The CSS class of a phase's badge. */
export function phaseClass(phase: string): string {
  switch (phase) {
    case "Healthy":
      return "ok";
    case "Progressing":
    case "Promoting":
    case "Initializing":
      return "busy";
    case "Paused":
      return "held";
    case "RollingBack":
    case "Failed":
    case "Invalid":
      return "bad";
    default:
      return "none";
  }
}
