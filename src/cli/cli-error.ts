/** A usage or input error: printed without a stack, exit code 2. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 2) {
    super(message);
  }
}
