import { AuthKeyFileError } from '../server/auth-key.ts';
import { DataDirInUseError } from '../server/data-dir-in-use-error.ts';
import { StoreFileError } from '../store/lowdb/index.ts';
import { LogFileError } from '../store/logs/sqlite-log-reader.ts';

/** What the operator was trying to do, by the failing system call. */
const ATTEMPT_BY_SYSCALL: Record<string, string> = {
  mkdir: 'cannot create directory',
  open: 'cannot open',
  read: 'cannot read',
  write: 'cannot write',
  chmod: 'cannot change the permissions of',
  rename: 'cannot replace',
  unlink: 'cannot remove',
  stat: 'cannot look at',
  lstat: 'cannot look at',
  scandir: 'cannot list',
  access: 'cannot access',
  listen: 'cannot listen on',
  getaddrinfo: 'cannot resolve host',
};

/** Why, by error code, in words rather than errno names. */
const REASON_BY_CODE: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted (owned by another user?)',
  EEXIST: 'it exists and is not a directory',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'a directory where a file was expected',
  ENOENT: 'no such file or directory',
  ENOSPC: 'no space left on the device',
  EROFS: 'read-only file system',
  EMFILE: 'too many open files',
  ENAMETOOLONG: 'name too long',
  ELOOP: 'too many symbolic links',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'name resolution failed for now',
  EADDRNOTAVAIL: 'not an address of this machine',
};

/**
 * The one-line message for a failure the operator can fix (a system error with a code, or a
 * known typed error), or undefined for a genuine bug, which keeps its stack. `where` names the
 * context when the system error itself names no file, host or address.
 */
export function describeRunError(err: unknown, where?: string): string | undefined {
  if (err instanceof StoreFileError || err instanceof LogFileError || err instanceof AuthKeyFileError || err instanceof DataDirInUseError) return err.message;
  if (!(err instanceof Error)) return undefined;
  const e = err as NodeJS.ErrnoException & { hostname?: string; address?: string; port?: number };
  // Node's own ERR_* codes are programming errors, not conditions of the machine.
  if (typeof e.code !== 'string' || e.code.startsWith('ERR_')) return undefined;
  const reason = REASON_BY_CODE[e.code] ?? e.code;
  const subject = e.path ?? e.hostname ?? (e.address !== undefined ? `${e.address}${e.port !== undefined ? `:${e.port}` : ''}` : undefined);
  const attempt = (e.syscall && ATTEMPT_BY_SYSCALL[e.syscall]) ?? (e.syscall ? `${e.syscall} failed for` : 'failed:');
  if (subject !== undefined) return `${attempt} ${subject}: ${reason}`;
  return `${where ? `${where}: ` : ''}${reason}${e.syscall ? ` (${e.syscall})` : ''}`;
}
