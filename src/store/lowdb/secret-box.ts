import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { createFileOnce } from '../create-file-once.ts';
import { readFileIfPresent } from '../file-if-present.ts';
import { StoreFileError } from './store-file-error.ts';

const FORMAT = 'v1';

/**
 * The way out when stored secrets need the key: no new key reads them. Without a backup, a
 * configuration that holds no secrets starts with a new key (open-config-store.ts).
 */
const KEY_NEEDED =
  'restore it from a backup; without it the stored credentials and access keys cannot be read. With no backup, empty the "credentials" and "access_keys" lists of config.json next to it (Groups and settings stay; import the credentials and create the access keys again), or move config.json away to start empty: the next start then makes a new key';

/** The way out when nothing stored needs the key. */
const KEY_NOT_NEEDED = 'no stored secret needs it: move it away and the next start makes a new one';

/**
 * AES-256-GCM for secrets at rest, with a 32-byte key kept in a file of the data directory
 * readable by the owner only. Also derives keyed hashes used as lookup indexes, so that a
 * secret can be found by value without decrypting every record or comparing plaintexts.
 */
export class SecretBox {
  readonly #key: Buffer;
  readonly #indexKey: Buffer;

  private constructor(key: Buffer) {
    this.#key = key;
    this.#indexKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'switchyard lookup index', 32));
  }

  /**
   * Loads the key file. When it is absent and no encrypted data exists yet (`mayCreate`), a
   * new key is made, and written unless `readOnly`.
   */
  static async open(file: string, mayCreate: boolean, readOnly = false): Promise<SecretBox> {
    let text = await readFileIfPresent(file);
    if (text === undefined) {
      if (!mayCreate) throw new StoreFileError(file, 'the encryption key file is missing but stored secrets need it', KEY_NEEDED);
      const key = randomBytes(32);
      if (readOnly) return new SecretBox(key);
      if (await createFileOnce(file, `${key.toString('base64')}\n`)) return new SecretBox(key);
      // Another start made it first: its key is the one.
      text = await readFileIfPresent(file);
      if (text === undefined) throw new StoreFileError(file, 'the encryption key file vanished while it was being created', 'start again: no stored secret needs it, and a new one is made');
    }
    const key = Buffer.from(text.trim(), 'base64');
    if (key.length !== 32) throw new StoreFileError(file, 'the encryption key file does not hold a 32-byte base64 key', mayCreate ? KEY_NOT_NEEDED : KEY_NEEDED);
    return new SecretBox(key);
  }

  /** `context` is bound as additional data, so a ciphertext moved to another record fails to open. */
  encrypt(plain: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [FORMAT, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
  }

  decrypt(sealed: string, context: string): string {
    const [format, iv, tag, body] = sealed.split(':');
    if (format !== FORMAT || iv === undefined || tag === undefined || body === undefined) throw new Error('unknown secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }

  index(purpose: string, value: string): string {
    return createHmac('sha256', this.#indexKey).update(purpose).update('\0').update(value).digest('base64url');
  }
}
