import type { IdleClock } from '../../../src/streaming/index.ts';

/** An IdleClock whose time moves only by `advance`, running the timers that fall due in order. */
export function fakeClock() {
  let now = 0;
  const timers: Array<{ at: number; fn: () => void; live: boolean }> = [];
  const clock: IdleClock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const timer = { at: now + ms, fn, live: true };
      timers.push(timer);
      return timer;
    },
    clearTimeout: (handle) => {
      (handle as { live: boolean }).live = false;
    },
  };
  const advance = (ms: number) => {
    const target = now + ms;
    for (;;) {
      const due = timers.filter((x) => x.live && x.at <= target).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      now = due.at;
      due.live = false;
      due.fn();
    }
    now = target;
  };
  return { clock, advance, liveTimers: () => timers.filter((x) => x.live).length };
}
