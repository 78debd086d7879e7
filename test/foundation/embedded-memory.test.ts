import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { gunzipWhole } from '../../src/db/embedded.js';

/**
 * What keeps the embedded server's memory in its bounds (docs/PERFORMANCE.md, "Embedded memory"); the bounds
 * themselves are measured by `npm run bench -- embedded-memory`.
 */

const EMBEDDED = new URL('../../src/db/embedded.ts', import.meta.url).pathname;

/**
 * In a process of its own (V8 flags are the process's): a small WebAssembly function called until V8's optimising
 * compiler has taken it, or a fixed number of rounds; answers which tier it ended on. V8's test natives say so.
 */
function tierAfterHotLoop(callBaselineWasmOnly: boolean): { liftoff: boolean; turbofan: boolean } {
  const code = `
    const { baselineWasmOnly } = await import(${JSON.stringify(EMBEDDED)});
    if (${callBaselineWasmOnly}) baselineWasmOnly();
    // (module (func (export "f") (param i32) (result i32) local.get 0 i32.const 1 i32.add))
    const bytes = new Uint8Array([0,97,115,109,1,0,0,0,1,6,1,96,1,127,1,127,3,2,1,0,7,5,1,1,102,0,0,10,9,1,7,0,32,0,65,1,106,11]);
    const f = (await WebAssembly.instantiate(bytes)).instance.exports.f;
    const turbofan = () => eval('%IsTurboFanFunction(f)');
    let x = 0;
    for (let round = 0; round < 400 && !turbofan(); round++) {
      for (let i = 0; i < 100000; i++) x = f(x);
      await new Promise((r) => setImmediate(r));
    }
    console.log(JSON.stringify({ liftoff: eval('%IsLiftoffFunction(f)'), turbofan: turbofan() }));`;
  const out = execFileSync(
    process.execPath,
    ['--allow-natives-syntax', '--wasm-tiering-budget=100', '--import', 'tsx', '--input-type=module', '-e', code],
    { encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as { liftoff: boolean; turbofan: boolean };
}

describe('the embedded database on V8 baseline WebAssembly code', () => {
  it('without baselineWasmOnly a hot function is optimised (the check can see it)', () => {
    expect(tierAfterHotLoop(false)).toEqual({ liftoff: false, turbofan: true });
  });

  it('after baselineWasmOnly (called by openEmbedded) it stays on baseline code however hot', () => {
    expect(tierAfterHotLoop(true)).toEqual({ liftoff: true, turbofan: false });
  });
});

describe('gunzipWhole (the cached snapshot)', () => {
  it('answers what gunzip answers, inflated into one chunk of the size the trailer states', () => {
    const data = Buffer.concat([randomBytes(300_000), Buffer.alloc(2_000_000, 7)]);
    const spy = vi.spyOn(zlib, 'gunzipSync');
    try {
      const out = gunzipWhole(zlib.gzipSync(data));
      expect(out.equals(data)).toBe(true);
      // zlib's default is 16 KiB chunks, whose C-heap pages stayed resident after a first start.
      expect(spy.mock.calls[0]?.[1]).toEqual({ chunkSize: data.length });
    } finally {
      spy.mockRestore();
    }
  });

  it('a trailer that states a wrong size is refused as gunzip refuses it; one that states a huge size is not believed', () => {
    const gz = zlib.gzipSync(Buffer.alloc(100_000, 1));
    const wrong = Buffer.from(gz);
    wrong.writeUInt32LE(50_000, wrong.length - 4);
    expect(() => gunzipWhole(wrong)).toThrow();
    expect(() => zlib.gunzipSync(wrong)).toThrow();
    const huge = Buffer.from(gz);
    huge.writeUInt32LE(0xffffffff, huge.length - 4);
    // Not allocated as 4 GiB: the inflate runs in ordinary chunks and its length check refuses the file.
    expect(() => gunzipWhole(huge)).toThrow(/length/i);
    expect(() => gunzipWhole(Buffer.from([1, 2]))).toThrow();
  });
});
