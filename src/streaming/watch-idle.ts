/** Timer functions, injectable so tests need not wait on the wall clock. */
export interface IdleClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: IdleClock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface IdleWatcher {
  /** Records activity; cheap enough to call for every chunk. */
  touch(): void;
  stop(): void;
  readonly fired: boolean;
}

/**
 * Calls `onIdle` once when `timeoutMs` pass without `touch()`. Activity only stores a
 * timestamp; the single timer re-arms itself for the remaining time when it wakes early,
 * so a fast stream does not reschedule a timer per chunk.
 */
export function watchIdle(timeoutMs: number, onIdle: () => void, clock: IdleClock = systemClock): IdleWatcher {
  let last = clock.now();
  let stopped = false;
  let fired = false;
  let handle: unknown;

  const check = (): void => {
    if (stopped) return;
    const idle = clock.now() - last;
    if (idle >= timeoutMs) {
      fired = true;
      stopped = true;
      onIdle();
    } else {
      handle = clock.setTimeout(check, timeoutMs - idle);
    }
  };
  handle = clock.setTimeout(check, timeoutMs);

  return {
    touch() {
      last = clock.now();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      clock.clearTimeout(handle);
    },
    get fired() {
      return fired;
    },
  };
}
