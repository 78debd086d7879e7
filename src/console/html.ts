/**
 * The console's one way to write HTML (docs/console.md): every value put into `html` is escaped, unless it is itself
 * the output of `html` (a fragment built the same way). No other function of the console writes markup from strings.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** The one escape of the console: text and attribute values alike (quotes included). */
export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

type Part = Html | string | number | bigint | boolean | null | undefined | readonly Part[];

function partText(p: Part): string {
  if (p instanceof Html) return p.text;
  if (Array.isArray(p)) return (p as readonly Part[]).map(partText).join('');
  if (p === null || p === undefined || p === false) return '';
  return esc(p);
}

/** Tagged template: the literal parts are markup, every interpolated value is escaped (arrays are joined). */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += partText(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** A query string from the given pairs, empty values left out; `?` included when anything remains. */
export function queryOf(pairs: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(pairs)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
