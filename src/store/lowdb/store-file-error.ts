/** A data file that cannot be used as it is; the message names the file and the way out. */
export class StoreFileError extends Error {
  readonly file: string;

  constructor(file: string, problem: string) {
    super(`${file}: ${problem}. The file was left untouched; restore it from a backup, or move it away to start with an empty one.`);
    this.name = 'StoreFileError';
    this.file = file;
  }
}
