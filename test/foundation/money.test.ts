import { describe, expect, it } from 'vitest';
import { compareMoney } from '../../src/shared/money.js';

describe('compareMoney: exact order of numeric(18,2) amounts', () => {
  it('equal amounts in any spelling compare equal; one cent apart is never equal, at any size', () => {
    expect(compareMoney('10.1', '10.10')).toBe(0);
    expect(compareMoney('10', '10.00')).toBe(0);
    expect(compareMoney('-0', '0.00')).toBe(0);
    expect(compareMoney('9999999999999999.99', '9999999999999999.98')).toBe(1);
    expect(compareMoney('9007199254740992', '9007199254740993')).toBe(-1);
    expect(compareMoney('0.29', '0.3')).toBe(-1);
    expect(compareMoney('-5.01', '-5')).toBe(-1);
    expect(compareMoney(' 7 ', '7')).toBe(0);
  });

  it('refuses what is not an amount rather than guessing', () => {
    for (const bad of ['', '1e3', '1.234', 'NaN', '12345678901234567']) expect(() => compareMoney(bad, '0')).toThrow(TypeError);
  });
});
