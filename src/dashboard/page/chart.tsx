/** A line chart of uPlot's, redrawn when its data change, sized to its container. */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface Line {
  label: string;
  color: string;
  values: (number | null)[];
  /** Drawn as steps (a weight holds until the next change). */
  stepped?: boolean;
  dash?: number[];
}

export function Chart(props: {
  title: string;
  times: number[];
  lines: Line[];
  yLabel: string;
  height?: number;
  yRange?: [number, number];
}) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const { title, times, lines, yLabel, height = 180, yRange } = props;
  const shape = lines.map((l) => `${l.label}${l.stepped === true ? "s" : ""}`).join("|");

  useEffect(() => {
    const element = host.current;
    if (element === null) return;
    const width = Math.max(280, element.clientWidth);
    const opts: uPlot.Options = {
      width,
      height,
      // The legend names the lines; values under the cursor would only jitter as it moves.
      legend: { live: false },
      scales: { x: { time: true }, y: yRange !== undefined ? { range: yRange } : { auto: true } },
      axes: [{ stroke: "#333" }, { stroke: "#333", label: yLabel }],
      series: [
        {},
        ...lines.map((l) => ({
          label: l.label,
          stroke: l.color,
          width: 2,
          ...(l.dash !== undefined ? { dash: l.dash } : {}),
          ...(l.stepped === true ? { paths: uPlot.paths.stepped?.({ align: 1 }) } : {}),
        })),
      ],
    };
    plot.current = new uPlot(opts, [times, ...lines.map((l) => l.values)], element);
    const resize = new ResizeObserver(() =>
      plot.current?.setSize({ width: Math.max(280, element.clientWidth), height }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // Rebuilt only when the lines change; new points go through setData below.
  }, [shape, height]);

  useEffect(() => {
    plot.current?.setData([times, ...lines.map((l) => l.values)]);
  }, [times, lines]);

  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={host} role="img" aria-label={title} />
    </figure>
  );
}
