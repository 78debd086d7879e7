import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BOOLEAN_TRUE_WORDS, parseSetting, settingDefs, type SettingKey } from '../../src/settings/registry.js';

/**
 * SQL that reads a boolean setting from the settings table (the catalogue's visibility, order_create) must read it as
 * the registry does: the same true words, and the registry's default when the row is absent. Every such read is
 * written `COALESCE((SELECT lower(btrim(s.value)) IN (<words>) FROM settings s WHERE s.key = '<key>'), <default>)`.
 */
const READ = /COALESCE\(\(SELECT lower\(btrim\(s\.value\)\) IN \(([^)]*)\) FROM settings s\s+WHERE s\.key = '([a-z_]+)'\), (true|false)\)/g;

function sources(): { file: string; text: string }[] {
  const dir = 'src/db/functions';
  const files = [...readdirSync(dir).map((f) => join(dir, f)), 'src/catalog/queries.ts'];
  return files.map((file) => ({ file, text: readFileSync(file, 'utf8') }));
}

describe('boolean settings read in SQL', () => {
  const reads = sources().flatMap(({ file, text }) =>
    [...text.matchAll(READ)].map((m) => ({ file, words: m[1]!, key: m[2]!, fallback: m[3] === 'true' })),
  );

  it('are found where the catalogue and the order function read hide_out_of_stock_source_products', () => {
    const files = reads.filter((r) => r.key === 'hide_out_of_stock_source_products').map((r) => r.file);
    expect(files).toEqual(expect.arrayContaining(['src/db/functions/order_create.sql', 'src/catalog/queries.ts']));
    // Any other read of that setting's value in SQL, not in the one form, is the rule written another way.
    for (const { file, text } of sources()) {
      const mentions = text.split("s.key = 'hide_out_of_stock_source_products'").length - 1;
      expect(reads.filter((r) => r.file === file && r.key === 'hide_out_of_stock_source_products').length, file).toBe(mentions);
    }
  });

  it('use the registry true words and default', () => {
    for (const r of reads) {
      expect(r.key in settingDefs, `${r.file}: ${r.key} is a setting`).toBe(true);
      const words = r.words.split(',').map((w) => w.trim().replace(/^'|'$/g, ''));
      expect(words, `${r.file}: the true words of ${r.key}`).toEqual([...BOOLEAN_TRUE_WORDS]);
      const key = r.key as SettingKey;
      expect(parseSetting(key, settingDefs[key].default), `${r.file}: the default of ${r.key}`).toEqual({ ok: true, value: r.fallback });
    }
  });
});
