/** Another server holds the data directory; two writers would lose each other's acknowledged writes. */
export class DataDirInUseError extends Error {
  readonly pid: number;

  constructor(dataDir: string, pid: number, lockFile: string) {
    super(`data directory ${dataDir} is in use by another switchyard server (pid ${pid}); stop that server first, or remove ${lockFile} if no such server runs`);
    this.name = 'DataDirInUseError';
    this.pid = pid;
  }
}
