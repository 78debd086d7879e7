import sanitizeHtml from 'sanitize-html';

/** Folds case and Vietnamese (and other Latin) accents: "Thẻ Garena" -> "the garena". Used for `q` search. */
export function foldForSearch(s: string): string {
  return s
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/đ/g, 'd')
    .replace(/Đ/g, 'D')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

/** Escapes LIKE metacharacters so that user text matches literally. */
export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const SAFE_HTML: sanitizeHtml.IOptions = {
  allowedTags: ['b', 'i', 'em', 'strong', 'u', 's', 'br', 'p', 'div', 'span', 'ul', 'ol', 'li', 'a', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'code', 'pre', 'hr', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'img'],
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
