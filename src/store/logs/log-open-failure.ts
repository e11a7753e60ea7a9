import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { getSystemErrorMap } from 'node:util';
import { LogFileError } from './sqlite-log-reader.ts';
import { LOG_DB_FILE } from './sqlite-log-store.ts';
import { RESTORE_OR_START_EMPTY } from '../lowdb/store-file-error.ts';

/** Why the log writer could not open its database, as the worker posts it: a plain object crosses threads whole, a SqliteError does not. */
export interface LogOpenFailure {
  /** SQLite's result code (SQLITE_NOTADB, SQLITE_READONLY_DBMOVED, …) or the system's (EEXIST, …). */
  code: string | undefined;
  /** The system's reason, or the error's own message when there is none. */
  detail: string;
}

const LEFT_UNTOUCHED = `The file was left untouched; ${RESTORE_OR_START_EMPTY}.`;
const GRANT_ACCESS = 'Give the user the gateway runs as write access to it and to its directory (a start with sudo leaves it owned by root), then start again.';

/** What is wrong (followed by the detail, when `withDetail`) and the way out, by SQLite's primary result code; any other code is "cannot be opened: <detail>". */
const PROBLEM_BY_CODE: Record<string, { problem: string; withDetail: boolean; wayOut?: string }> = {
  SQLITE_NOTADB: { problem: 'not a SQLite database', withDetail: false, wayOut: LEFT_UNTOUCHED },
  SQLITE_CORRUPT: { problem: 'the database is damaged', withDetail: false, wayOut: LEFT_UNTOUCHED },
  SQLITE_CANTOPEN: { problem: 'cannot be opened', withDetail: true },
  SQLITE_READONLY: { problem: 'the gateway cannot write it (owned by another user, or read-only)', withDetail: false, wayOut: GRANT_ACCESS },
};

/** Worker side: the failure to post. SQLite names no cause for SQLITE_CANTOPEN, so the file is opened once more to learn the system's. */
export function logOpenFailure(error: unknown, dataDir: string): LogOpenFailure {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'SQLITE_CANTOPEN') return { code, detail: systemReason(join(dataDir, LOG_DB_FILE)) ?? message };
  return { code: typeof code === 'string' ? code : undefined, detail: message };
}

function systemReason(file: string): string | undefined {
  try {
    closeSync(openSync(file, 'r+'));
    return undefined;
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).errno;
    return errno === undefined ? undefined : getSystemErrorMap().get(errno)?.[1];
  }
}

/** Main-thread side: the one-line error naming `<dataDir>/logs.sqlite`, what is wrong with it and the way out. */
export function logOpenError(dataDir: string, failure: LogOpenFailure): LogFileError {
  const primary = failure.code?.match(/^SQLITE_[A-Z]+/)?.[0];
  const known = primary === undefined ? undefined : PROBLEM_BY_CODE[primary];
  if (known === undefined) return new LogFileError(join(dataDir, LOG_DB_FILE), `cannot be opened: ${failure.detail}`);
  const reason = `${known.problem}${known.withDetail ? `: ${failure.detail}` : ''}${known.wayOut === undefined ? '' : `. ${known.wayOut}`}`;
  return new LogFileError(join(dataDir, LOG_DB_FILE), reason);
}
