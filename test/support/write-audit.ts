/**
 * Which controller replica wrote what, for which app, from kube-apiserver's audit log (a control plane started
 * with `audit: true`, e2e/cluster/audit.ts): the server's own record, independent of what the replicas log.
 *
 * A write is an audit event of verb create, update, patch, delete or deletecollection whose User-Agent is a
 * replica's, `canaryapp/<version> (<identity>)` (src/kube/user-agent.ts); every attempt counts, whatever the
 * answer (a write refused with 409 or 404 was still sent by a replica that meant to act). Its time is
 * `requestReceivedTimestamp`, when the server received it (microseconds). It is the write of one app,
 * `namespace/name`: the CanaryApp itself (or its status), a child named `<app>`, `<app>-primary` or
 * `<app>-secondary`, a pod of such a child (`<child>-<ordinal>`), or an Event about the app (`<app>.<suffix>`).
 *
 * Windows and violations, per app:
 * - A replica's **window** on an app is a run of its writes to that app in which each write follows the one
 *   before by less than a lease duration (15 s by default): from the first to the last of them. A pause of a
 *   lease duration or more ends the window; a replica that gave the app up and took it back later has two.
 * - A **tenure** is a maximal run of consecutive writes to the app, in the server's order, by one replica: any
 *   other replica's write ends it. Two tenures in a row by different replicas are a **handover**.
 * - A **violation** is two windows of different replicas on one app that overlap (ends included): one
 *   replica wrote the app between two writes of the other made less than a lease duration apart, so both
 *   were acting on it at once. A replica never gets an app back within a lease duration of handing it over
 *   in these tests: a rolling update stops the replica that gives its shares up, and a replica killed comes
 *   back under another identity. An app handed back and forth faster than that would be counted too; its
 *   pair of windows is printed for a person to judge.
 * Writes by anything else (the tests' own clients, kube-controller-manager) are not a replica's and are left
 * out, but a CanaryApp written by anyone names an app.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";

/** One line of the audit log (an audit.k8s.io/v1 Event), as far as it is read here. */
export interface AuditEvent {
  stage?: string;
  verb?: string;
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
}

/** A replica's write, as the audit log records it, and the app it is for. */
export interface AuditedWrite {
  /** When the server received it: ms since the epoch, with the server's microseconds as the fraction. */
  at: number;
  /** The replica's identity, from its User-Agent. */
  replica: string;
  /** `namespace/name` of the app. */
  app: string;
  /** e.g. `patch virtualservices app-1`, `update canaryapps/status app-1`. */
  what: string;
  /** The HTTP code of the answer. */
  code: number;
}

/** One replica's window on one app (see the module's comment). */
export interface WriteWindow {
  app: string;
  replica: string;
  from: number;
  to: number;
  writes: number;
}

/** What {@link auditWrites} found. */
export interface WriteAudit {
  /** Writes by replicas, attributed to an app. */
  writes: number;
  /** The replicas that wrote, by identity. */
  replicas: string[];
  /** Writes per replica. */
  writesBy: Record<string, number>;
  /** The apps written. */
  apps: number;
  /** Every pair of overlapping windows of two replicas on one app: the violations. */
  overlaps: string[];
  tenures: number;
  handovers: number;
  /** Longest time from the last write of a tenure to the first write of the next, another replica's (ms). */
  longestHandoverMs: number;
  /** Writes by replicas that name no known app (reported, not attributed). */
  unattributed: string[];
}

const WRITE_VERBS = new Set(["create", "update", "patch", "delete", "deletecollection"]);
const REPLICA_AGENT = /^canaryapp\/\S+ \((.*)\)$/;

/** The identity in a replica's User-Agent, or undefined for any other client. */
export function replicaOf(userAgent: string | undefined): string | undefined {
  return userAgent === undefined ? undefined : REPLICA_AGENT.exec(userAgent)?.[1];
}

/** An RFC 3339 time with up to nanoseconds as ms since the epoch, the digits past ms kept as the fraction. */
export function auditTime(text: string): number {
  const match = /^(.*?)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(text);
  if (match === null) return Number.NaN;
  return Date.parse(`${match[1] ?? ""}${match[3] ?? "Z"}`) + Number(`0.${match[2] ?? "0"}`) * 1000;
}

/**
 * The audit log's events, in file order. `keep` sees each raw line first: a line it refuses is not parsed
 * (a shared log is large; the test's namespace is a cheap filter).
 */
export async function readAuditLog(path: string, keep: (line: string) => boolean = () => true): Promise<AuditEvent[]> {
  const events: AuditEvent[] = [];
  const lines = createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === "" || !keep(line)) continue;
    try {
      events.push(JSON.parse(line) as AuditEvent);
    } catch {
      // A line being written as the file is read; the writes that matter were complete before.
    }
  }
  return events;
}

/** The app (`namespace/name`) an object written belongs to, among the `apps` known, else undefined. */
export function appOf(ref: NonNullable<AuditEvent["objectRef"]>, apps: ReadonlySet<string>): string | undefined {
  const namespace = ref.namespace ?? "";
  const name = ref.name ?? "";
  if (name === "") return undefined;
  if (ref.resource === "canaryapps") return `${namespace}/${name}`;
  let candidates: string[];
  if (ref.resource === "events") {
    candidates = [name.slice(0, Math.max(0, name.lastIndexOf(".")))];
  } else {
    const child = ref.resource === "pods" ? name.replace(/-\d+$/, "") : name;
    candidates = [child, child.replace(/-(primary|secondary)$/, "")];
  }
  return candidates.map((c) => `${namespace}/${c}`).find((key) => apps.has(key));
}

/**
 * The replicas' writes among `events` (ResponseComplete stage, write verbs, a replica's User-Agent), each with
 * its app: one of `apps` (`namespace/name`), or a CanaryApp written by anyone in the log. Sorted by time.
 */
export function replicaWrites(
  events: readonly AuditEvent[],
  apps: Iterable<string> = [],
): { writes: AuditedWrite[]; unattributed: string[] } {
  const known = new Set(apps);
  for (const e of events) {
    if (e.objectRef?.resource === "canaryapps" && e.objectRef.name) {
      known.add(`${e.objectRef.namespace ?? ""}/${e.objectRef.name}`);
    }
  }
  const writes: AuditedWrite[] = [];
  const unattributed: string[] = [];
  for (const e of events) {
    if ((e.stage !== undefined && e.stage !== "ResponseComplete") || !WRITE_VERBS.has(e.verb ?? "")) continue;
    const replica = replicaOf(e.userAgent);
    const ref = e.objectRef;
    if (replica === undefined || ref === undefined) continue;
    const resource = ref.subresource ? `${ref.resource ?? ""}/${ref.subresource}` : (ref.resource ?? "");
    const what = `${e.verb ?? ""} ${resource} ${ref.namespace ?? ""}/${ref.name ?? ""}`;
    const app = appOf(ref, known);
    if (app === undefined) {
      unattributed.push(`${replica}: ${what}`);
      continue;
    }
    writes.push({
      at: auditTime(e.requestReceivedTimestamp ?? ""),
      replica,
      app,
      what,
      code: e.responseStatus?.code ?? 0,
    });
  }
  writes.sort((a, b) => a.at - b.at);
  return { writes, unattributed };
}

function byApp(writes: readonly AuditedWrite[]): Map<string, AuditedWrite[]> {
  const apps = new Map<string, AuditedWrite[]>();
  for (const w of [...writes].sort((a, b) => a.at - b.at)) {
    const list = apps.get(w.app) ?? [];
    list.push(w);
    apps.set(w.app, list);
  }
  return apps;
}

/** Every replica's windows on every app: its writes to the app, cut wherever two follow a lease duration apart or more. */
export function writeWindows(writes: readonly AuditedWrite[], leaseDurationMs: number): WriteWindow[] {
  const windows: WriteWindow[] = [];
  for (const [app, list] of byApp(writes)) {
    const open = new Map<string, WriteWindow>();
    for (const w of list) {
      const current = open.get(w.replica);
      if (current !== undefined && w.at - current.to < leaseDurationMs) {
        current.to = w.at;
        current.writes++;
        continue;
      }
      const window = { app, replica: w.replica, from: w.at, to: w.at, writes: 1 };
      windows.push(window);
      open.set(w.replica, window);
    }
  }
  return windows;
}

/**
 * The audit of `writes` (see the module's comment): the overlapping windows of two replicas on one app, and
 * the tenures and handovers. Times in the overlaps are given in ms since `origin`.
 */
export function auditWrites(
  writes: readonly AuditedWrite[],
  options: { leaseDurationMs?: number; origin?: number; unattributed?: string[] } = {},
): WriteAudit {
  const leaseDurationMs = options.leaseDurationMs ?? 15_000;
  const origin = options.origin ?? 0;
  const ms = (t: number) => Math.round(t - origin);
  const overlaps: string[] = [];
  const windows = writeWindows(writes, leaseDurationMs);
  const perApp = new Map<string, WriteWindow[]>();
  for (const w of windows) perApp.set(w.app, [...(perApp.get(w.app) ?? []), w]);
  for (const [app, list] of perApp) {
    for (const [i, a] of list.entries()) {
      for (const b of list.slice(i + 1)) {
        if (a.replica !== b.replica && a.from <= b.to && b.from <= a.to) {
          const overlap = Math.min(a.to, b.to) - Math.max(a.from, b.from);
          overlaps.push(
            `${app}: ${a.replica} (${a.writes} writes ${ms(a.from)}–${ms(a.to)} ms) and ${b.replica} (${b.writes} writes ${ms(b.from)}–${ms(b.to)} ms) overlap ${Math.round(overlap)} ms`,
          );
        }
      }
    }
  }
  let tenures = 0;
  let handovers = 0;
  let longestHandoverMs = 0;
  for (const list of byApp(writes).values()) {
    let previous: AuditedWrite | undefined;
    for (const w of list) {
      if (previous === undefined || previous.replica !== w.replica) {
        tenures++;
        if (previous !== undefined) {
          handovers++;
          longestHandoverMs = Math.max(longestHandoverMs, w.at - previous.at);
        }
      }
      previous = w;
    }
  }
  const writesBy: Record<string, number> = {};
  for (const w of writes) writesBy[w.replica] = (writesBy[w.replica] ?? 0) + 1;
  return {
    writes: writes.length,
    replicas: Object.keys(writesBy).sort(),
    writesBy,
    apps: new Set(writes.map((w) => w.app)).size,
    overlaps,
    tenures,
    handovers,
    longestHandoverMs: Math.round(longestHandoverMs),
    unattributed: options.unattributed ?? [],
  };
}

/**
 * The audit log at `path`, its writes by replicas in `namespace` (or in any of several), audited (see
 * {@link auditWrites}).
 */
export async function auditLog(
  path: string,
  namespace: string | readonly string[],
  options: { apps?: Iterable<string>; leaseDurationMs?: number; origin?: number } = {},
): Promise<WriteAudit> {
  const namespaces = new Set(typeof namespace === "string" ? [namespace] : namespace);
  const needles = [...namespaces].map((n) => `"namespace":"${n}"`);
  const events = await readAuditLog(path, (line) => needles.some((needle) => line.includes(needle)));
  const { writes, unattributed } = replicaWrites(
    events.filter((e) => namespaces.has(e.objectRef?.namespace ?? "")),
    options.apps,
  );
  return auditWrites(writes, { ...options, unattributed });
}

/** The audit as one line of figures. */
export function formatAudit(audit: WriteAudit): string {
  return (
    `${audit.writes} writes by ${audit.replicas.length} replicas to ${audit.apps} apps audited ` +
    `(${audit.replicas.map((r) => `${r} ${audit.writesBy[r] ?? 0}`).join(", ")}); ` +
    `${audit.tenures} tenures, ${audit.handovers} handovers (longest ${audit.longestHandoverMs} ms between two replicas' writes); ` +
    `written by two replicas at once: ${audit.overlaps.length}; unattributed writes: ${audit.unattributed.length}`
  );
}
