import { errorMemberOf } from './error-body-member.ts';

/**
 * A 429's error code whose message dates the limit's reset (`unified`: the wall-clock time in the
 * message, read in the vendor's time zone `zone`), for a vendor that sends no retry header: the
 * key cools down until then rather than being asked again, and refused, every
 * `credential_cooldown_seconds` for hours or days.
 */
interface ResetInMessageRow {
  raw: string;
  unified: 'reset-at';
  zone: string;
}

const resetInMessageRows: readonly ResetInMessageRow[] = [
  // Zhipu (bigmodel.cn, z.ai), the coding plan's 5-hour window: 429 {"error":{"code":"1308","message":"Usage limit reached for
  // 5 hour. Your limit will reset at 2026-09-09 05:38:28"}}, Beijing time (hugalafutro/model-hotel#955).
  { raw: '1308', unified: 'reset-at', zone: '+08:00' },
  // Zhipu, its weekly or monthly limit: 429 {"error":{"code":"1310","message":"Weekly/Monthly Limit Exhausted. Your limit will
  // reset at 2026-03-06 22:19:54"}} (openclaw/openclaw#33785).
  { raw: '1310', unified: 'reset-at', zone: '+08:00' },
];

/** The first date and time of day in the message, in the Chinese wording as in the English. */
const DATE_TIME = /(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})/;

/** The wait until the reset a 429 body's message dates (OpenAI's error shape), in ms from `now`; undefined when its code is none of the rows'. */
export function messageResetMs(body: Buffer, now: number): number | undefined {
  const error = errorMemberOf(body);
  const code = error?.['code'];
  const row = resetInMessageRows.find((r) => r.raw === (typeof code === 'number' ? String(code) : code));
  const message = error?.['message'];
  const found = row === undefined || typeof message !== 'string' ? null : DATE_TIME.exec(message);
  if (row === undefined || found === null) return undefined;
  const at = Date.parse(`${found[1]}T${found[2]}${row.zone}`);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
