import { describe, expect, it } from 'vitest';
import {
  firstInexactNumber,
  InexactJsonNumber,
  isExactNumberLiteral,
  JsonDecimal,
  parseJsonExact,
  stringifyJsonExact,
} from '../../src/shared/json-exact.js';
import { moneyOut } from '../../src/shared/money.js';

// docs/errors.md, "Amounts in JSON": which JSON numbers a double holds, and amounts written and read without one.

describe('JSON numbers without a double in between', () => {
  it('tells the literals a double holds from those it turns into another number', () => {
    const exact = ['0', '-0', '0.1', '0.30000000000000004', '1.005', '1e2', '2E-2', '1e21', '1e308', '5e-324', '9007199254740992'];
    const inexact = ['9007199254740993', '99999999999999.99', '1.0000000000000001', '123456789012345678', '1e309', '1e-400', '-1e-400'];
    for (const l of exact) expect(isExactNumberLiteral(l), l).toBe(true);
    for (const l of inexact) expect(isExactNumberLiteral(l), l).toBe(false);
    // In a whole text: strings are not numbers, whatever they hold.
    expect(firstInexactNumber('{"a":"9007199254740993","b\\"":[1e2,{"c":99999999999999.99}],"d":1.0000000000000001}')).toBe(
      '99999999999999.99',
    );
    expect(firstInexactNumber('{"a":"9007199254740993 \\" 1.0000000000000001","b":12.5}')).toBeUndefined();
  });

  it('reads a number a double does not hold as its text, everything else as JSON.parse does', () => {
    const text = '{"a":[9007199254740993,1.5,"x\\u0041"],"__proto__":{"b":99999999999999.99},"c":null,"d":true,"e":{}}';
    const v = parseJsonExact(text) as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['a', '__proto__', 'c', 'd', 'e']);
    expect(v.a).toEqual([new JsonDecimal('9007199254740993'), 1.5, 'xA']);
    expect(stringifyJsonExact(v)).toBe(text.replace('\\u0041', 'A'));
    expect(parseJsonExact('[1,{"a":[]}]')).toEqual(JSON.parse('[1,{"a":[]}]'));
    expect(() => parseJsonExact('[9007199254740993,')).toThrow(SyntaxError);
  });

  it('writes what JSON.stringify writes, with amounts as their decimal text, indented or not', () => {
    const value = {
      a: moneyOut('12.50'),
      b: [1, 'é"', undefined, null, new Date(0), { c: [], d: {} }],
      e: undefined,
      f: moneyOut('-0.00'),
    };
    for (const indent of [0, 2]) expect(stringifyJsonExact(value, indent)).toBe(JSON.stringify(value, null, indent));
    const large = { ...value, a: moneyOut('99999999999999.99') };
    for (const indent of [0, 2])
      expect(stringifyJsonExact(large, indent)).toBe(JSON.stringify(value, null, indent).replace('12.5', '99999999999999.99'));
    // A plain JSON.stringify never writes another amount: it refuses.
    expect(() => JSON.stringify(large)).toThrow(InexactJsonNumber);
    expect(moneyOut('0099.10').text).toBe('99.1');
  });
});
