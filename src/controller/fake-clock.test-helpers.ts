import type { Clock, Timer } from "../time/clock.js";

interface Scheduled {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A manual clock for tests. Time stands still until `advance` moves it; timers that fall due fire in time
 * order (ties in scheduling order), each followed by a turn of the event loop so that promise chains
 * waiting on them (sleep → retry → schedule again) run before the next timer.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: Scheduled[] = [];

  constructor(startMs = Date.UTC(2024, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  schedule(fn: () => void, delayMs: number): Timer {
    const entry: Scheduled = { at: this.current + Math.max(0, delayMs), seq: this.seq++, fn, cancelled: false };
    this.timers.push(entry);
    return {
      cancel: () => {
        entry.cancelled = true;
      },
    };
  }

  /** Timers scheduled and not yet fired or cancelled. */
  pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await flush();
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      const next = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (next === undefined) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.fn();
      await flush();
    }
    this.current = target;
    await flush();
  }
}

/** Lets pending promise callbacks and I/O callbacks run. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
