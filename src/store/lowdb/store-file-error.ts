/** The way out for a data file whose content can be given up: an empty one replaces it. */
export const RESTORE_OR_START_EMPTY = 'restore it from a backup, or move it away to start with an empty one';

/** A data file that cannot be used as it is; the message names the file and the way out, which differs by file. */
export class StoreFileError extends Error {
  readonly file: string;

  constructor(file: string, problem: string, advice: string) {
    super(`${file}: ${problem}. The file was left untouched; ${advice}.`);
    this.name = 'StoreFileError';
    this.file = file;
  }
}
