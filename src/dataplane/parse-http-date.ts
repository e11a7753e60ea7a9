const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(?<month>${MONTHS.join('|')})`;
const TIME = '(?<hours>\\d{2}):(?<minutes>\\d{2}):(?<seconds>\\d{2})';
/** The three HTTP-date forms (RFC 9110 §5.6.7), each in GMT (asctime-date says no zone, and means GMT too). */
const HTTP_DATES: readonly RegExp[] = [
  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
  new RegExp(`^[A-Za-z]{3}, (?<day>\\d{2}) ${MONTH} (?<year>\\d{4}) ${TIME} GMT$`),
  // rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
  new RegExp(`^[A-Za-z]{6,9}, (?<day>\\d{2})-${MONTH}-(?<year>\\d{2}) ${TIME} GMT$`),
  // asctime-date: Sun Nov  6 08:49:37 1994 (the day space-padded)
  new RegExp(`^[A-Za-z]{3} ${MONTH} (?<day> \\d|\\d{2}) ${TIME} (?<year>\\d{4})$`),
];

/**
 * An HTTP date as milliseconds since the epoch, or undefined when the value is not one (Date.parse
 * would take 'May 5' or 'x 1', and read the asctime form, which names no zone, as local time).
 */
export function httpDateMs(value: string, now: number): number | undefined {
  for (const pattern of HTTP_DATES) {
    const date = pattern.exec(value)?.groups;
    if (date === undefined) continue;
    const day = Number(date['day']);
    const [hours, minutes, seconds] = [Number(date['hours']), Number(date['minutes']), Number(date['seconds'])];
    const midnight = Date.UTC(fullYear(date['year']!, now), MONTHS.indexOf(date['month']!), day);
    // Not a day of that month (31 Feb), nor a time of day (60 s is a leap second).
    if (new Date(midnight).getUTCDate() !== day || hours > 23 || minutes > 59 || seconds > 60) return undefined;
    return midnight + ((hours * 60 + minutes) * 60 + seconds) * 1000;
  }
  return undefined;
}

/**
 * rfc850-date's two-digit year: the one that appears no more than 50 years in the future, else the
 * most recent past year with those digits (RFC 9110 §5.6.7).
 */
function fullYear(year: string, now: number): number {
  if (year.length === 4) return Number(year);
  const current = new Date(now).getUTCFullYear();
  const candidate = current - (current % 100) + Number(year);
  return candidate > current + 50 ? candidate - 100 : candidate;
}
