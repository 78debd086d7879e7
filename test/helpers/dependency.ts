import { describe, it } from 'vitest';

/** Something a suite needs from the machine (a Redis server, PHP with PDO), and what to do when it is missing. */
export type Dependency = { name: string; available: boolean; hint: string };

/** CI exports CI=true (.ci/run): there a suite never skips for a missing dependency, so a green run proves it ran. */
export const inCi = () => process.env.CI === 'true';

/**
 * `describe` for a suite that needs `deps`. All present: the suite runs. One missing outside CI: the suite is skipped
 * and its title says what is missing and how to get it. One missing with CI=true: the suite's body is not even
 * registered (no hook runs against a server that is not there) and one test fails with the same reason.
 * A suite skipped by design (PostgreSQL-only on the PGlite run) stays a plain `describe.skipIf`, not this.
 */
export function describeNeeding(...deps: Dependency[]): (title: string, body: () => void) => void {
  const missing = deps.filter((d) => !d.available);
  if (missing.length === 0) return (title, body) => describe(title, body);
  const reason = missing.map((d) => `${d.name} is missing (${d.hint})`).join('; ');
  if (inCi()) {
    return (title, body) => {
      void body;
      describe(title, () => {
        it('has what it needs to run', () => {
          throw new Error(
            `${reason}. With CI=true a suite whose dependency is missing fails instead of skipping (docs/development.md, "Testing").`,
          );
        });
      });
    };
  }
  return (title, body) => describe.skip(`${title} (skipped: ${reason})`, body);
}
