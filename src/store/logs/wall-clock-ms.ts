/**
 * Milliseconds since the epoch with sub-millisecond precision, comparable between the main
 * thread and the log writer's (each has its own timeOrigin, both on the same clock).
 */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}
