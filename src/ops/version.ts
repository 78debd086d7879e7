import fs from 'node:fs';

/** The version in package.json, recorded in backups so that an operator knows which release wrote one. */
export function serverVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '?';
  } catch {
    return '?';
  }
}
