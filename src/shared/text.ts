import sanitizeHtml from 'sanitize-html';

// Text from outside that PostgreSQL or a reader cannot take as it is (docs/operations.md, "Source limits"):
// C0 controls except tab and line feed (PostgreSQL text cannot hold NUL at all), DEL and C1 controls; and a surrogate
// without its pair, which is not text (it has no UTF-8 form: a JSON or text parameter holding one is refused).
// eslint-disable-next-line no-control-regex
const TEXT_CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Whether `s` holds a control character (tab and line feed aside) or a lone surrogate. */
export function hasUnsafeText(s: string): boolean {
  TEXT_CONTROL.lastIndex = 0;
  LONE_SURROGATE.lastIndex = 0;
  return TEXT_CONTROL.test(s) || LONE_SURROGATE.test(s);
}

/** `s` without its control characters and with each lone surrogate replaced by U+FFFD; and whether it changed. */
export function cleanText(s: string): [string, boolean] {
  if (!hasUnsafeText(s)) return [s, false];
  return [s.replace(TEXT_CONTROL, '').replace(LONE_SURROGATE, '\uFFFD'), true];
}

/**
 * A character that shows as ink: anything but White_Space, Default_Ignorable_Code_Point (zero-width characters, bidi
 * controls, variation selectors, the Hangul fillers, the soft hyphen), controls (Cc), format characters (Cf),
 * surrogates, private-use and unassigned code points (no glyph anyone can rely on), marks (a combining mark shows only
 * on a base character) and U+2800 BRAILLE PATTERN BLANK (a blank cell that no property above covers). Unassigned is as
 * of the Unicode version of the running Node (docs/operations.md, "Source limits").
 */
const VISIBLE = /[^\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{M}\u2800]/u;

/** Whether `s` holds at least one visible character (VISIBLE): a code made only of blanks is no code. */
export function hasVisibleCharacter(s: string): boolean {
  return VISIBLE.test(s);
}

/** Folds case and Vietnamese (and other Latin) accents: "Thẻ Garena" -> "the garena". Used for `q` search. */
export function foldForSearch(s: string): string {
  return s.normalize('NFD').replace(/\p{M}/gu, '').replace(/đ/g, 'd').replace(/Đ/g, 'D').toLowerCase().replace(/\s+/g, ' ').trim();
}

/** Escapes LIKE metacharacters so that user text matches literally. */
export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const SAFE_HTML: sanitizeHtml.IOptions = {
  allowedTags: [
    'b',
    'i',
    'em',
    'strong',
    'u',
    's',
    'br',
    'p',
    'div',
    'span',
    'ul',
    'ol',
    'li',
    'a',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'blockquote',
    'code',
    'pre',
    'hr',
    'table',
    'thead',
    'tbody',
    'tr',
    'th',
    'td',
    'img',
  ],
  allowedAttributes: { a: ['href', 'title', 'target', 'rel'], img: ['src', 'alt', 'title', 'width', 'height'], '*': [] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['http', 'https'] },
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  // A link that opens a new tab must not hand the opener window to the target page.
  transformTags: {
    a: (tagName, attribs) => ({ tagName, attribs: attribs.target ? { ...attribs, rel: 'noopener noreferrer' } : attribs }),
  },
  // script/style bodies are dropped whole, not kept as text
  nonTextTags: ['script', 'style', 'textarea', 'noscript', 'iframe', 'object'],
};

/** Keeps line breaks and safe HTML; removes scripts, event handlers, javascript: links and unknown tags. */
export function sanitizeDescription(input: string): string {
  return sanitizeHtml(input.replace(/\r\n?/g, '\n'), SAFE_HTML);
}
