import type { Locale } from './error-codes.ts';

/**
 * Picks the response language from Accept-Language by q-value. Any Chinese tag gets
 * Simplified Chinese (the only Chinese we ship); everything else falls back to English.
 */
export function pickLocale(acceptLanguage: string | undefined): Locale {
  if (!acceptLanguage) return 'en';
  let best: { locale: Locale; q: number } | undefined;
  for (const part of acceptLanguage.split(',')) {
    const [rawTag, ...params] = part.trim().split(';');
    const tag = (rawTag ?? '').trim().toLowerCase();
    if (!tag) continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m?.[1] !== undefined) q = Number(m[1]);
    }
    if (!(q > 0)) continue;
    const locale: Locale | undefined = tag === 'zh' || tag.startsWith('zh-') ? 'zh-CN' : tag === 'en' || tag.startsWith('en-') ? 'en' : undefined;
    if (locale && (!best || q > best.q)) best = { locale, q };
  }
  return best?.locale ?? 'en';
}
