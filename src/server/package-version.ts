import pkg from '../../package.json' with { type: 'json' };

/** The version of this release, from package.json (imported, so a bundle carries it). */
export function packageVersion(): string {
  return pkg.version;
}
