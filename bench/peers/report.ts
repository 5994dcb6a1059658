/** The figures of `make bench-peers`, as JSON, a printed table and the README's table. Pure. */

/** One rollout of one app: seconds from the image change, and the requests about that app. */
export interface RolloutFigures {
  app: string;
  scaledUpSeconds: number;
  firstWeightSeconds: number;
  /** Until the route sends everything to the primary, which runs the new version. */
  allTrafficSeconds: number;
  /** Until the controller is at rest again: what the test left removed (after its drain, if it has one). */
  fullSeconds: number;
  /** Requests whose object is the app, one of its children or an Event about them. */
  requests: number;
  /** Those requests by verb and resource (`patch deployments`, `create events`, ...). */
  requestsByVerb: Record<string, number>;
}

export interface PeerFigures {
  label: string;
  apps: number;
  /** The analysis interval the controller used (Flagger's floor is 10 s). */
  intervalSeconds: number;
  steps: number;
  atRest: {
    windowSeconds: number;
    requests: number;
    requestsPerMinute: number;
    /** `verb resource` → count, in the window. */
    byVerb: Record<string, number>;
  };
  /** VmRSS of the controller process at the end of the rest window. */
  rssMiB: number;
  rollouts: RolloutFigures[];
  /** Requests during the rollouts that name no single app (lists, watches). */
  sharedRequestsDuringRollouts: number;
  /** What the controller's own records say its checks measured during the rollouts, where it keeps them. */
  checks?: string;
}

export interface PeersResult {
  date: string;
  work: { apps: number; intervalSeconds: number; stepWeight: number; maxWeight: number; rollouts: number };
  machine: { cpus: number; node: string };
  peers: PeerFigures[];
}

export interface Range {
  min: number;
  median: number;
  max: number;
}

export function range(values: readonly number[]): Range | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return { min: sorted[0] ?? 0, median, max: sorted.at(-1) ?? 0 };
}

/** `1.2 s`, or `0.02–0.20 s` for a spread: hundredths under a second, tenths above. */
function seconds(r: Range | undefined): string {
  if (r === undefined) return "–";
  const f = (v: number) => v.toFixed(v < 1 ? 2 : 1);
  return f(r.min) === f(r.max) ? `${f(r.min)} s` : `${f(r.min)}–${f(r.max)} s`;
}

function count(r: Range | undefined): string {
  if (r === undefined) return "–";
  const f = (v: number) => Math.round(v).toLocaleString("en-US");
  return f(r.min) === f(r.max) ? f(r.min) : `${f(r.min)}–${f(r.max)}`;
}

/** A peer's median over the first column's: how many times more the peer takes. */
function ratio(ours: number | undefined, theirs: number | undefined): string {
  if (ours === undefined || theirs === undefined) return "–";
  if (ours === 0) return theirs === 0 ? "=" : "∞";
  const r = theirs / ours;
  return `${r < 10 ? r.toFixed(2) : r.toFixed(0)}×`;
}

interface Row {
  label: string;
  cells: string[];
  medians: (number | undefined)[];
}

function rows(result: PeersResult): Row[] {
  const peers = result.peers;
  const per = <T>(f: (p: PeerFigures) => T) => peers.map(f);
  const rolloutRange = (p: PeerFigures, f: (r: RolloutFigures) => number) => range(p.rollouts.map(f));
  const floors = [...new Set(per((p) => p.steps * p.intervalSeconds))].map((s) => `${s} s`).join(" / ");
  const apps = result.work.apps;
  return [
    {
      label: `API requests/min at rest, ${apps} apps`,
      cells: per((p) => Math.round(p.atRest.requestsPerMinute).toLocaleString("en-US")),
      medians: per((p) => p.atRest.requestsPerMinute),
    },
    ...(
      [
        ["image patch → new version scaled up", (r) => r.scaledUpSeconds],
        ["image patch → first weight", (r) => r.firstWeightSeconds],
        [
          `image patch → all traffic on it, ${result.peers[0]?.steps ?? 5} steps (floor: ${floors} of steps)`,
          (r) => r.allTrafficSeconds,
        ],
        ["image patch → at rest again (the test's pods removed)", (r) => r.fullSeconds],
      ] as [string, (r: RolloutFigures) => number][]
    ).map(([label, f]) => ({
      label,
      cells: per((p) => seconds(rolloutRange(p, f))),
      medians: per((p) => rolloutRange(p, f)?.median),
    })),
    {
      label: "API requests during one rollout (about that app)",
      cells: per((p) => count(rolloutRange(p, (r) => r.requests))),
      medians: per((p) => rolloutRange(p, (r) => r.requests)?.median),
    },
    {
      label: `RSS, ${apps} apps`,
      cells: per((p) => `${Math.round(p.rssMiB)} MiB`),
      medians: per((p) => p.rssMiB),
    },
  ];
}

/** A Markdown table: one column per peer, then each other peer's ratio to the first (canaryapp when it ran). */
export function markdownTable(result: PeersResult): string {
  const [first, ...others] = result.peers;
  const head = ["", ...result.peers.map((p) => p.label), ...others.map((p) => `${p.label} ÷ ${first?.label}`)];
  const lines = [`| ${head.join(" | ")} |`, `|${head.map(() => "---").join("|")}|`];
  for (const row of rows(result)) {
    const ratios = others.map((_, i) => ratio(row.medians[0], row.medians[i + 1]));
    lines.push(`| ${[row.label, ...row.cells, ...ratios].join(" | ")} |`);
  }
  return lines.join("\n");
}

/** The README block: the table and how it was measured. */
export function readmeBlock(result: PeersResult): string {
  const w = result.work;
  return [
    markdownTable(result),
    "",
    `Measured by \`make bench-peers\` on ${result.date.slice(0, 10)} (${result.machine.cpus} CPUs): ${w.apps} apps of 1 replica, ` +
      `interval ${w.intervalSeconds} s, ${w.maxWeight / w.stepWeight} steps of ${w.stepWeight} % to ${w.maxWeight} %, ` +
      `an always-passing check; ${w.rollouts} rollouts each (ranges are min–max, ratios of medians). ` +
      "canaryapp keeps the test's pods for `drainSeconds` (default 5 s) after the route is seen to have left " +
      "them, so that requests still in flight to them finish; Flagger reaches rest one interval after it routes back; " +
      "Argo Rollouts scales the previous version down `scaleDownDelaySeconds` (default 30 s with traffic routing) " +
      "after it routes all traffic to the new one.",
  ].join("\n");
}

export const README_START = "<!-- bench-peers:start -->";
export const README_END = "<!-- bench-peers:end -->";

/** `text` with what lies between the markers replaced by `block`; an error when the markers are missing. */
export function replaceBetweenMarkers(text: string, block: string): string {
  const start = text.indexOf(README_START);
  const end = text.indexOf(README_END);
  if (start < 0 || end < start) throw new Error(`README.md: no ${README_START} … ${README_END} block`);
  return `${text.slice(0, start + README_START.length)}\n${block}\n${text.slice(end)}`;
}
