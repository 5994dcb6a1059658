/** A number as people read it in a status line: at most three decimals, no trailing zeros. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return String(Math.round(value * 1000) / 1000);
}
