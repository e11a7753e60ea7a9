import { SlotSet } from './slot-set.ts';

/** Timer functions, injectable so tests need not wait on the wall clock. */
export interface IdleClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The longest delay node's setTimeout takes (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: IdleClock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface IdleWatcher {
  /** Records activity; cheap enough to call for every chunk. */
  touch(): void;
  /**
   * The silence from now on is the reader's doing (it stopped reading), not the source's: if
   * it lasts the timeout, `onIdle` is told so. `release` when reading goes on.
   */
  hold(): void;
  release(): void;
  stop(): void;
  readonly fired: boolean;
}

/** Wake-ups of a sweeper are at least this fraction of the shortest timeout apart. */
const MIN_GAP_FRACTION = 1 / 16;

class Watch implements IdleWatcher {
  /** Its place among the sweeper's watchers. */
  slot = -1;
  last: number;
  fired = false;
  #held = false;
  readonly timeoutMs: number;
  readonly #onIdle: (held: boolean) => void;
  readonly #sweeper: IdleSweeper;

  constructor(sweeper: IdleSweeper, timeoutMs: number, onIdle: (held: boolean) => void) {
    this.#sweeper = sweeper;
    this.timeoutMs = timeoutMs;
    this.#onIdle = onIdle;
    this.last = sweeper.clock.now();
  }

  touch(): void {
    this.last = this.#sweeper.clock.now();
  }

  hold(): void {
    if (this.#held) return;
    this.#held = true;
    this.touch();
  }

  release(): void {
    this.#held = false;
    this.touch();
  }

  stop(): void {
    this.#sweeper.remove(this);
  }

  fire(): void {
    this.fired = true;
    this.#onIdle(this.#held);
  }
}

/**
 * One timer for every watcher of a clock. With a timer per stream, under load most of each
 * streamed request's objects survived into the old generation (measured: 8.9 KB promoted per
 * request against 0.7 KB with this sweeper, and scavenges 2.5 times as costly). The sweeper
 * wakes when the earliest watcher could be idle, fires the ones that are, and sleeps until the
 * next possible deadline.
 */
class IdleSweeper {
  readonly clock: IdleClock;
  readonly #watching = new SlotSet<Watch>();
  #handle: unknown;
  #wakeAt = Infinity;
  #sweeping = false;

  constructor(clock: IdleClock) {
    this.clock = clock;
  }

  add(watch: Watch): void {
    this.#watching.add(watch);
    const due = watch.last + watch.timeoutMs;
    if (!this.#sweeping && due < this.#wakeAt) this.#schedule(due, watch.last);
  }

  /**
   * The timer stays when the last watcher goes: it finds nothing to do once, which costs less
   * than clearing it and setting another when the next stream starts, as happens on every
   * stream when streams come one at a time.
   */
  remove(watch: Watch): void {
    this.#watching.delete(watch);
  }

  readonly #sweep = (): void => {
    this.#handle = undefined;
    this.#wakeAt = Infinity;
    this.#sweeping = true;
    const now = this.clock.now();
    let next = Infinity;
    let shortest = Infinity;
    try {
      // Watchers added while sweeping (by an onIdle) are visited too; they are not due yet.
      this.#watching.forEach((watch) => {
        const due = watch.last + watch.timeoutMs;
        if (due <= now) {
          this.#watching.delete(watch);
          watch.fire();
        } else {
          if (due < next) next = due;
          if (watch.timeoutMs < shortest) shortest = watch.timeoutMs;
        }
      });
    } finally {
      this.#sweeping = false;
      if (this.#watching.size > 0) this.#schedule(Math.max(next, now + shortest * MIN_GAP_FRACTION), now);
    }
  };

  #schedule(at: number, now: number): void {
    this.#cancel();
    this.#wakeAt = at;
    // node fires a longer delay at once (TimeoutOverflowWarning): a far wake-up is a sweep that finds nothing due yet.
    this.#handle = this.clock.setTimeout(this.#sweep, Math.min(MAX_TIMER_MS, Math.max(0, at - now)));
  }

  #cancel(): void {
    if (this.#handle !== undefined) this.clock.clearTimeout(this.#handle);
    this.#handle = undefined;
    this.#wakeAt = Infinity;
  }
}

const sweepers = new WeakMap<IdleClock, IdleSweeper>();

/**
 * Calls `onIdle` once when `timeoutMs` pass without `touch()`, with whether the watcher was
 * held then (the reader, not the source, was silent). Activity only stores a timestamp; the
 * clock's shared sweeper checks the deadlines.
 */
export function watchIdle(timeoutMs: number, onIdle: (held: boolean) => void, clock: IdleClock = systemClock): IdleWatcher {
  let sweeper = sweepers.get(clock);
  if (sweeper === undefined) {
    sweeper = new IdleSweeper(clock);
    sweepers.set(clock, sweeper);
  }
  const watch = new Watch(sweeper, timeoutMs, onIdle);
  sweeper.add(watch);
  return watch;
}
