/** Display form of a secret in lists: enough to recognize it, not enough to use it. */
export function maskSecret(value: string): string {
  if (value.length < 12) return '*'.repeat(Math.min(value.length, 8));
  return `${value.slice(0, 4)}...${value.slice(-4)}`;
}
