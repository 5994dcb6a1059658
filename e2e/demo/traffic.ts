/**
 * Lines up what Prometheus scraped with the weights the route had: counter samples become per-scrape
 * request counts, the route's timeline becomes constant-weight segments, and the two are compared with
 * some slack, since the simulator, the watch that timed the route and Prometheus' scrapes each lag a
 * little. Pure, so the comparisons themselves are tested.
 */
import type { RouteWeights, Timed } from "./recorder.js";

/** One series of a Prometheus matrix result (`values` are [unix seconds, "number"]). */
export interface MatrixSeries {
  metric: Record<string, string>;
  values: [number, string][];
}

/** Requests counted between two consecutive scrapes (times in ms). */
export interface ScrapeDelta {
  from: number;
  to: number;
  secondary: number;
  total: number;
}

/** A span of time during which the route gave the secondary one weight (null routes count as 0). */
export interface WeightSegment {
  from: number;
  to: number;
  secondary: number;
}

/**
 * The requests counted between consecutive scrapes, summed over every series, those of `isSecondary`
 * apart. A series counts as 0 before its first sample: the simulator creates a series with its first
 * request, so its first sample holds the requests since the scrape before.
 */
export function scrapeDeltas(
  series: readonly MatrixSeries[],
  isSecondary: (metric: Record<string, string>) => boolean,
): ScrapeDelta[] {
  const times = [...new Set(series.flatMap((s) => s.values.map(([t]) => t)))].sort((a, b) => a - b);
  const totals = times.map(() => ({ secondary: 0, total: 0 }));
  for (const s of series) {
    const byTime = new Map(s.values.map(([t, v]) => [t, Number(v)]));
    const secondary = isSecondary(s.metric);
    let last = 0;
    times.forEach((t, i) => {
      last = byTime.get(t) ?? last;
      const sums = totals[i];
      if (sums === undefined) return;
      sums.total += last;
      if (secondary) sums.secondary += last;
    });
  }
  const deltas: ScrapeDelta[] = [];
  for (let i = 1; i < times.length; i++) {
    const [t0, t1, a, b] = [times[i - 1], times[i], totals[i - 1], totals[i]];
    if (t0 === undefined || t1 === undefined || a === undefined || b === undefined) continue;
    deltas.push({ from: t0 * 1000, to: t1 * 1000, secondary: b.secondary - a.secondary, total: b.total - a.total });
  }
  return deltas;
}

/** The route's timeline as segments, the last one ending at `end`; before the first entry the weight is 0. */
export function weightSegments(timeline: readonly Timed<RouteWeights | null>[], end: number): WeightSegment[] {
  const segments: WeightSegment[] = [];
  timeline.forEach((entry, i) => {
    const to = timeline[i + 1]?.at ?? end;
    if (to > entry.at) segments.push({ from: entry.at, to, secondary: entry.value?.secondary ?? 0 });
  });
  return segments;
}

/** Whether the secondary had weight at any moment of [from, to]. */
export function weightedDuring(segments: readonly WeightSegment[], from: number, to: number): boolean {
  return segments.some((s) => s.secondary > 0 && s.from <= to && s.to >= from);
}

/**
 * Scrape intervals in which the secondary was sent requests although the route gave it no weight at any
 * time within `slackMs` of the interval (only the first scrape interval after a change may lag it).
 * Intervals before the timeline starts are not judged.
 */
export function unexplainedSecondaryTraffic(
  deltas: readonly ScrapeDelta[],
  segments: readonly WeightSegment[],
  slackMs: number,
): ScrapeDelta[] {
  const start = segments[0]?.from ?? Infinity;
  return deltas.filter(
    (d) => d.from >= start && d.secondary > 0 && !weightedDuring(segments, d.from - slackMs, d.to + slackMs),
  );
}

/**
 * The part of each segment away from its edges by `slackMs`, where the traffic must follow the segment's
 * weight: segments whose inner part is shorter than `minMs` are left out.
 */
export function innerWindows(segments: readonly WeightSegment[], slackMs: number, minMs: number): WeightSegment[] {
  return segments
    .map((s) => ({ from: s.from + slackMs, to: s.to - slackMs, secondary: s.secondary }))
    .filter((s) => s.to - s.from >= minMs);
}
