/**
 * JSON numbers without the double in between (docs/errors.md, "Amounts in JSON"). JSON.parse reads every number into
 * a double, so a literal of 16 or more significant digits can come out as another number (9007199254740993 reads as
 * ...992, 99999999999999.99 as ...98) without an error; JSON.stringify of a double cannot write such an amount at all.
 * Here a number is either checked to survive the double, or kept as its decimal text (JsonDecimal) both ways.
 */

/**
 * A JSON number kept as its decimal text: stringifyJsonExact writes it as that literal. JSON.stringify writes it through
 * toJSON as the double when that is the same number, and throws when it is not (InexactJsonNumber), so that no plain
 * JSON.stringify can write another amount.
 */
export class JsonDecimal {
  /** Whether the double of the text is the same number (then JSON.stringify writes it exactly). */
  readonly exact: boolean;
  constructor(readonly text: string) {
    if (!NUMBER_LITERAL.test(text)) throw new TypeError(`Not a JSON number: ${JSON.stringify(text)}`);
    this.exact = isExactNumberLiteral(text);
  }
  toJSON(): number {
    if (this.exact) return Number(this.text);
    throw new InexactJsonNumber(this.text);
  }
  toString(): string {
    return this.text;
  }
}

/** JSON.stringify met a JsonDecimal a double does not hold: write the value with stringifyJsonExact. */
export class InexactJsonNumber extends Error {
  constructor(readonly literal: string) {
    super(`${literal} is not exact as a double; write it with stringifyJsonExact`);
    this.name = 'InexactJsonNumber';
  }
}

const NUMBER_LITERAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** The value of a number literal in one spelling, sign, digits (no leading or trailing zero) and power of ten; zero is "0". */
function canonical(literal: string): string | null {
  const m = NUMBER_LITERAL.exec(literal);
  if (!m) return null;
  const frac = m[3] ?? '';
  const digits = (m[2]! + frac).replace(/^0+/, '');
  if (digits === '') return '0';
  const kept = digits.replace(/0+$/, '');
  const exp = BigInt(m[4] ?? '0') - BigInt(frac.length) + BigInt(digits.length - kept.length);
  return `${m[1]}${kept}e${exp}`;
}

/**
 * Whether the double JSON.parse makes of this literal is the number written: its shortest decimal form (what
 * JSON.stringify writes) has the literal's value. 0.1 passes (it reads back as 0.1); 9007199254740993, 1.0000000000000001
 * and 1e400 do not. Negative zero is zero.
 */
export function isExactNumberLiteral(literal: string): boolean {
  // Up to 15 significant digits a decimal always survives a double (DBL_DIG), as long as it stays far from the ends
  // of the double's range (about 1e-308 to 1e308): the common case, decided without building the canonical forms.
  if (literal.length <= 15 && !/[eE]/.test(literal)) return true;
  const m = NUMBER_LITERAL.exec(literal);
  if (!m) return false;
  const fracLength = m[3]?.length ?? 0;
  if (m[2]!.length + fracLength <= 15 && (m[4] ?? '').length <= 4 && Math.abs(Number(m[4] ?? 0) - fracLength) <= 290) return true;
  const n = Number(literal);
  return Number.isFinite(n) && canonical(String(n)) === canonical(literal);
}

// On valid JSON: a whole string (skipped) or a whole number literal; the other tokens hold no digit.
const TOKENS = /"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
// A literal that may not survive is longer than 15 characters or has an exponent.
const MAYBE_INEXACT = /[\d.][eE]|[-\d.]{16}/;

/** The first number literal of a valid JSON text that a double does not hold exactly, if any. */
export function firstInexactNumber(json: string): string | undefined {
  if (!MAYBE_INEXACT.test(json)) return undefined;
  for (const m of json.matchAll(TOKENS)) if (m[0].charCodeAt(0) !== 0x22 && !isExactNumberLiteral(m[0])) return m[0];
  return undefined;
}

const TOKEN = /\s*(?:("[^"\\]*(?:\\.[^"\\]*)*")|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null)|([{}[\]:,]))/y;

/**
 * JSON.parse, except that a number a double does not hold exactly becomes a JsonDecimal of its literal. For answers of
 * servers that write such amounts (ours, a source site): a client that reads them through a double shows another amount.
 */
export function parseJsonExact(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (firstInexactNumber(text) === undefined) return value;
  // The text is valid JSON (JSON.parse took it): only the tokens are read again, in order.
  let pos = 0;
  const next = (): RegExpExecArray => {
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(text);
    if (!m) throw new SyntaxError('Unexpected token in JSON');
    pos = TOKEN.lastIndex;
    return m;
  };
  const read = (m: RegExpExecArray): unknown => {
    if (m[1] !== undefined) return JSON.parse(m[1]) as string;
    if (m[2] !== undefined) return isExactNumberLiteral(m[2]) ? Number(m[2]) : new JsonDecimal(m[2]);
    if (m[3] !== undefined) return m[3] === 'null' ? null : m[3] === 'true';
    if (m[4] === '[') {
      const list: unknown[] = [];
      for (let t = next(); t[4] !== ']'; t = next()) list.push(read(t[4] === ',' ? next() : t));
      return list;
    }
    const obj: Record<string, unknown> = {};
    for (let t = next(); t[4] !== '}'; t = next()) {
      const key = JSON.parse((t[4] === ',' ? next() : t)[1]!) as string;
      next(); // the colon
      // As JSON.parse does: "__proto__" is an own property, never the prototype.
      Object.defineProperty(obj, key, { value: read(next()), enumerable: true, writable: true, configurable: true });
    }
    return obj;
  };
  return read(next());
}

/** JSON.stringify (no replacer), except that a JsonDecimal is written as its literal, never through a double. */
export function stringifyJsonExact(value: unknown, indent = 0): string {
  try {
    // The native writer, four times faster, is exact as long as every JsonDecimal is (JsonDecimal.toJSON).
    return (JSON.stringify(value, null, indent) as string | undefined) ?? 'null';
  } catch (err) {
    if (!(err instanceof InexactJsonNumber)) throw err;
    return write(value, indent > 0 ? ' '.repeat(indent) : '', '\n') ?? 'null';
  }
}

/** JSON.stringify's algorithm, with JsonDecimal as a literal; `pad` is one level of indent ('' for none). */
function write(raw: unknown, pad: string, at: string): string | undefined {
  if (raw instanceof JsonDecimal) return raw.text;
  const v: unknown =
    raw !== null && typeof raw === 'object' && typeof (raw as { toJSON?: unknown }).toJSON === 'function'
      ? (raw as { toJSON(): unknown }).toJSON()
      : raw;
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
      return JSON.stringify(v);
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'object': {
      const inner = at + pad;
      const [open, sep, close] = pad ? [inner, `,${inner}`, at] : ['', ',', ''];
      const colon = pad ? ': ' : ':';
      const parts: string[] = [];
      if (Array.isArray(v)) {
        for (const x of v) parts.push(write(x, pad, inner) ?? 'null');
        return parts.length === 0 ? '[]' : `[${open}${parts.join(sep)}${close}]`;
      }
      for (const k of Object.keys(v)) {
        const s = write((v as Record<string, unknown>)[k], pad, inner);
        if (s !== undefined) parts.push(`${JSON.stringify(k)}${colon}${s}`);
      }
      return parts.length === 0 ? '{}' : `{${open}${parts.join(sep)}${close}}`;
    }
    default:
      return undefined;
  }
}
