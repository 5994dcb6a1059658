/** The raw outcome of one check's query, before it is judged against the check's thresholds. */
export type QueryOutcome =
  | { kind: "value"; value: number }
  /**
   * The query returned several series; the seed mode counts them, threshold checks judge each. `labels`,
   * when known, names each series (`{pod="a"}`), in the order of `values`.
   */
  | { kind: "values"; values: number[]; labels?: string[] }
  /** A judged metric's samples over the step (the check's `range`), in time order. */
  | { kind: "samples"; values: number[] }
  | { kind: "empty" }
  | { kind: "error"; message: string };
