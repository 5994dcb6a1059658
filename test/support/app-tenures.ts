import { SHARE_LOG } from "../../src/controller/held-shares.js";
import { shareOf } from "../../src/controller/shards.js";
import type { ControllerProcess } from "./process.js";

/**
 * When each controller process could write for each app, from its own log: a sharded replica from "took a
 * share" (its fence opens) to "gave up a share" (or its fence closed by a late renewal, or its exit); an
 * unsharded leader from "became leader" to "released the lease" or "lost leadership…" (or its exit). Every
 * write a replica makes for an app is under one of these (the fence refuses the others; an unsharded
 * replica runs its workers only while it leads), so two replicas' windows for one app that overlap are two
 * replicas that may both have written the app's children, Events and status at once.
 */
export interface Replica {
  process: ControllerProcess;
  /** Its `--shards`; undefined for an unsharded (leader-elected) replica. */
  shares: number | undefined;
  /** When the test saw it exit (epoch ms), if it did. */
  exitedAt?: number;
}

export interface Tenure {
  who: string;
  from: number;
  to: number;
}

function logTime(line: Record<string, unknown>): number | undefined {
  const time = line["time"];
  return typeof time === "number" ? time : undefined;
}

/** The windows of one replica for the app `key`. */
export function appTenures(replica: Replica, key: string, end: number): Tenure[] {
  const stop = replica.exitedAt ?? end;
  const out: Tenure[] = [];
  const who = replica.process.identity;
  let open: number | undefined;
  const close = (at: number) => {
    if (open === undefined) return;
    out.push({ who, from: open, to: at });
    open = undefined;
  };
  const share = replica.shares === undefined ? undefined : shareOf(key, replica.shares);
  for (const line of replica.process.logs) {
    const time = logTime(line);
    const msg = line["msg"];
    if (time === undefined || typeof msg !== "string") continue;
    if (share === undefined) {
      if (msg === "became leader") open ??= time;
      else if (msg === "released the lease" || msg.startsWith("lost leadership")) close(time);
      continue;
    }
    if (line["share"] !== share) continue;
    if (msg === "took a share") open ??= time;
    else if (msg === "renewed a share after the renew deadline; its fence is open again") open ??= time;
    else if (msg === "gave up a share" || msg === "a share's renewal is late; its fence is closed") close(time);
  }
  close(stop);
  return out;
}

/** Every pair of windows of two different replicas that overlap, for any of `keys`. */
export function overlappingAppTenures(replicas: readonly Replica[], keys: readonly string[], end: number): string[] {
  const overlaps: string[] = [];
  for (const key of keys) {
    const list = replicas.flatMap((r) => appTenures(r, key, end));
    for (const [i, a] of list.entries()) {
      for (const b of list.slice(i + 1)) {
        if (a.who !== b.who && a.from < b.to && b.from < a.to) {
          overlaps.push(
            `${key}: ${a.who} ${a.from}–${a.to} and ${b.who} ${b.from}–${b.to} (${Math.min(a.to, b.to) - Math.max(a.from, b.from)} ms)`,
          );
        }
      }
    }
  }
  return overlaps;
}

/** The longest time, between `from` and `to`, during which nobody could write for the app `key`. */
export function longestGap(replicas: readonly Replica[], key: string, from: number, to: number): number {
  const list = replicas
    .flatMap((r) => appTenures(r, key, to))
    .filter((t) => t.to > from && t.from < to)
    .sort((a, b) => a.from - b.from);
  let covered = from;
  let gap = 0;
  for (const t of list) {
    if (t.from > covered) gap = Math.max(gap, t.from - covered);
    covered = Math.max(covered, t.to);
  }
  return Math.max(gap, to - covered);
}

/**
 * The times two processes held the same share at once, from their logs: a share is held from its "took a
 * share" line until the process's next "gave up a share" line for it, its death, or `end`; a fence closed by a
 * late renewal ends the tenure too, and its opening again under the same term begins another.
 */
export function overlappingShareTenures(
  processes: { process: ControllerProcess; killedAt?: number }[],
  end: number,
): string[] {
  const tenures = new Map<number, { who: string; from: number; to: number }[]>();
  for (const { process, killedAt } of processes) {
    const stop = killedAt ?? end;
    const open = new Map<number, number>();
    const close = (share: number, at: number) => {
      const from = open.get(share);
      if (from === undefined) return;
      open.delete(share);
      const list = tenures.get(share) ?? [];
      list.push({ who: process.identity, from, to: at });
      tenures.set(share, list);
    };
    for (const line of process.logs) {
      const share = line["share"];
      const time = line["time"];
      if (typeof share !== "number" || typeof time !== "number") continue;
      if (line["msg"] === "took a share") open.set(share, time);
      else if (line["msg"] === SHARE_LOG.reopened && !open.has(share)) open.set(share, time);
      else if (line["msg"] === "gave up a share" || line["msg"] === SHARE_LOG.closed) close(share, time);
    }
    for (const share of [...open.keys()]) close(share, stop);
  }
  const overlaps: string[] = [];
  for (const [share, list] of tenures) {
    for (const [i, a] of list.entries()) {
      for (const b of list.slice(i + 1)) {
        if (a.who !== b.who && a.from < b.to && b.from < a.to) {
          overlaps.push(`share ${share}: ${a.who} ${a.from}–${a.to}, ${b.who} ${b.from}–${b.to}`);
        }
      }
    }
  }
  return overlaps;
}
