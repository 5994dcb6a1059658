/**
 * The wiring's forward references. Some parts are made after closures that use them: the caches before the
 * shard work that says what they keep, the reconciler and the shard work before the Controller whose queue
 * they add to. Such closures reach the part through a `Later`, set once where the part is made.
 */
import type { Controller } from "../controller/controller.js";
import type { ShardWork } from "../controller/shard-work.js";

/**
 * A value set once, after the closures that read it were made. Nothing reads one before `startController`
 * returns (no cache, election or worker runs before); a read before the set throws.
 */
export class Later<T> {
  #value: { readonly is: T } | undefined;

  /** `what` names the value in the errors. */
  constructor(private readonly what: string) {}

  /** Sets the value and returns it. */
  set(value: T): T {
    if (this.#value !== undefined) throw new Error(`${this.what} is set twice`);
    this.#value = { is: value };
    return value;
  }

  get(): T {
    if (this.#value === undefined) throw new Error(`${this.what} is used before it is made`);
    return this.#value.is;
  }
}

/** The work queue, as the parts made before the Controller reach it. */
export interface LateQueue {
  /** Queues the key on the Controller's queue. */
  add(key: string): void;
  /** Takes the key off the Controller's queue. */
  remove(key: string): void;
  /** Judges an app again: queued, or, sharded, offered to the share's work (held or remembered: ShardWork). */
  requeue(key: string): void;
}

/** The queue of the Controller to come; `work` is the shard work (undefined: not sharded). */
export function lateQueue(controller: Later<Controller>, work: Later<ShardWork | undefined>): LateQueue {
  return {
    add: (key) => controller.get().queue.add(key),
    remove: (key) => controller.get().queue.remove(key),
    requeue: (key) => {
      const shardWork = work.get();
      if (shardWork === undefined) controller.get().queue.add(key);
      else shardWork.offer(key);
    },
  };
}
