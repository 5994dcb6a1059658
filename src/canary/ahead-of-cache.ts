/** A child by kind, namespace and name. */
export interface ChildRef {
  kind: string;
  namespace?: string | undefined;
  name?: string | undefined;
}

/**
 * What this process has done that the state it reads does not show yet: the one memory a reconcile keeps
 * besides the caches and the app's status. Both kinds of entry only spare a write or an Event; losing them
 * (a restart, another replica) costs one repeated request each, never a wrong decision.
 *
 * - Per app, the transition whose Events this process has told (all of them exist now). Marking them told in
 *   status is not worth a status write of its own: the mark rides on the next write the app needs anyway, and
 *   until then this memory keeps them from being told twice. A process without it tells them again within
 *   REPLAY_SECONDS, each a 409 the recorder ignores (status/transition-events.ts).
 * - Per child, what this process last wrote (the applied hash, or that it deleted it) while the caches have not
 *   shown an event of the child since. A reconcile that comes before the cache catches up (the app's own status
 *   write races its child's watch event) skips a child whose desired state it already wrote, instead of writing
 *   it again and telling an "Updated" nobody made. Any event of the child ends the entry (`seen`): then the
 *   cache is compared as always, and a change made by someone else in between is repaired as always. An entry
 *   for a write the server found unchanged (no event follows) stays until the child's next event: harmless, and
 *   bounded by the number of children.
 */
export class AheadOfCache {
  readonly #told = new Map<string, string>();
  readonly #written = new Map<string, string>();

  /** Whether this process told the Events of `transition` of the app `appKey`. */
  toldTransition(appKey: string, transition: string | undefined): boolean {
    return transition !== undefined && this.#told.get(appKey) === transition;
  }

  /** The Events of `transition` of the app `appKey` all exist now. */
  told(appKey: string, transition: string | undefined): void {
    if (transition !== undefined) this.#told.set(appKey, transition);
  }

  /** The app is gone. Its children's entries end with their own delete events. */
  forgetApp(appKey: string): void {
    this.#told.delete(appKey);
  }

  /** Whether this process applied `child` with `hash` and the caches have not shown it since. */
  appliedUnseen(child: ChildRef, hash: string): boolean {
    return this.#written.get(childKey(child)) === hash;
  }

  applied(child: ChildRef, hash: string): void {
    this.#written.set(childKey(child), hash);
  }

  /** Whether this process deleted `child` and the caches have not shown it since. */
  deletedUnseen(child: ChildRef): boolean {
    return this.#written.get(childKey(child)) === DELETED;
  }

  deleted(child: ChildRef): void {
    this.#written.set(childKey(child), DELETED);
  }

  /** The cache shows an event of the child: a write of it by this process is no longer ahead of the cache. */
  seen(child: ChildRef): void {
    if (this.#written.size > 0) this.#written.delete(childKey(child));
  }
}

/** What the child entry holds for a delete; an applied hash is never this. */
const DELETED = "deleted";

function childKey({ kind, namespace, name }: ChildRef): string {
  return `${kind}/${namespace ?? ""}/${name ?? ""}`;
}
