import path from 'node:path';
import { AUTH_KEY_FILE, type AuthKeySource } from './auth-key.ts';

/** Where the AUTH_KEY given to `loadAuthKey` came from, when one was given. */
export type AuthKeyOrigin = 'environment' | 'options';

/**
 * The console line naming where the management key comes from, printed on every start: a key
 * generated on a start that then failed (port in use), or one exported as the README does, is
 * otherwise found nowhere on the console. Never the value.
 */
export function authKeyLine(dataDir: string, source: AuthKeySource, given: { origin: AuthKeyOrigin; value: string | undefined }): string {
  if (source.generatedAt !== undefined) return `switchyard: generated an AUTH_KEY and stored it in ${source.generatedAt} (readable only by its owner).`;
  // As loadAuthKey decides: a blank value is not a key, and the file is used.
  if (given.value !== undefined && given.value.trim() !== '') {
    return given.origin === 'environment'
      ? 'switchyard: the AUTH_KEY (management key) comes from the AUTH_KEY environment variable.'
      : 'switchyard: the AUTH_KEY (management key) is the one given in the server options.';
  }
  return `switchyard: the AUTH_KEY (management key) is in ${path.join(dataDir, AUTH_KEY_FILE)}.`;
}
