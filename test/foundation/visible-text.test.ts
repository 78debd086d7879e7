import { describe, expect, it } from 'vitest';
import { hasVisibleCharacter } from '../../src/shared/text.js';

// The rule that a delivered code holds at least one visible character (docs/operations.md, "Source limits").
describe('hasVisibleCharacter', () => {
  it.each([
    ['empty', ''],
    ['spaces', '   '],
    ['no-break and ideographic spaces', '\u00a0\u2007\u202f\u3000'],
    ['line and paragraph separators', '\u2028\u2029'],
    ['zero-width space, joiner, non-joiner, word joiner', '\u200b\u200d\u200c\u2060'],
    ['byte order mark', '\ufeff'],
    ['bidi marks and embeddings', '\u200e\u200f\u202a\u202b\u202c\u202d\u202e'],
    ['bidi isolates and the Arabic letter mark', '\u2066\u2067\u2068\u2069\u061c'],
    ['soft hyphen and combining grapheme joiner', '\u00ad\u034f'],
    ['variation selectors', '\ufe0f\u{e0100}'],
    ['tag characters', '\u{e0041}\u{e007f}'],
    ['Hangul fillers', '\u3164\uffa0\u115f\u1160'],
    ['Mongolian vowel separator and Khmer inherent vowels', '\u180e\u17b4\u17b5'],
    ['braille blank', '\u2800'],
    ['combining marks alone', '\u0301\u0308\u20dd'],
    ['private use', '\ue000\u{f0000}'],
    ['unassigned', '\u0378'],
  ])('%s: not visible', (_name, s) => {
    expect(hasVisibleCharacter(s)).toBe(false);
  });

  it.each([
    ['ASCII letter', 'A'],
    ['digit', '0'],
    ['punctuation', '-'],
    ['a letter with a combining accent', 'e\u0301'],
    ['Cyrillic, Hangul, Han', 'Ж가中'],
    ['symbol and emoji', '€😀'],
    ['one visible among blanks and format characters', '\u200b \u202eX\u202c '],
  ])('%s: visible', (_name, s) => {
    expect(hasVisibleCharacter(s)).toBe(true);
  });
});
