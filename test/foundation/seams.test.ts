import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The folder rules of eslint.config.js, asked of a one-line probe placed (virtually) in each folder: a config change
// that drops a rule fails here, not only in a review.
async function restricted(filePath: string, code: string): Promise<string[]> {
  const [result] = await new ESLint().lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('module seams (eslint.config.js)', () => {
  it('payments/ may not import ordering/, nor ordering/ payments/; both may import the platform', async () => {
    expect(
      await restricted('src/payments/probe.ts', "import { userOf } from '../ordering/auth.js';\nexport const x = userOf;\n"),
    ).toHaveLength(1);
    expect(
      await restricted('src/ordering/probe.ts', "import { payClientOf } from '../payments/auth.js';\nexport const x = payClientOf;\n"),
    ).toHaveLength(1);
    expect(
      await restricted(
        'src/payments/probe.ts',
        "import { installRateLimit } from '../http/rate-limit.js';\nexport const x = installRateLimit;\n",
      ),
    ).toEqual([]);
  });

  it('shared/ imports nothing from the project, only packages and its own files', async () => {
    expect(
      await restricted('src/shared/probe.ts', "import { AppError } from '../http/errors.js';\nexport const x = AppError;\n"),
    ).toHaveLength(1);
    expect(
      await restricted(
        'src/shared/probe.ts',
        "import { sql } from 'drizzle-orm';\nimport { normalizeIp } from './ip.js';\nexport const x = [sql, normalizeIp];\n",
      ),
    ).toEqual([]);
  });
});
