import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { serverCommand } from '../../scripts/drills/kit.js';
import { START_TIMEOUT_MS } from '../helpers/server-process.js';

// The drills in .ci/run are cut off at their bound (or by a signal): what they started must not outlive them.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const FIXTURE = path.join(ROOT, 'test/helpers/drill-fixture.ts');

function runFixture(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', TSX, FIXTURE], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exit, out: () => out, err: () => err };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(check: () => boolean, ms: number, what: string) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('drill kit: a drill cut short cleans up after itself', () => {
  it('over its bound, the drill runs its registered clean-ups and exits 1', async () => {
    const marker = path.join(os.tmpdir(), `rg-drill-marker-${process.pid}-${Date.now()}`);
    try {
      const f = runFixture({ FIXTURE_MODE: 'bound', FIXTURE_BOUND_MS: '1000', FIXTURE_MARKER: marker });
      expect(await f.exit).toBe(1);
      expect(f.err()).toContain('over its 1 s bound');
      expect(fs.readFileSync(marker, 'utf8')).toBe('cleaned');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  }, 60_000);

  it(
    'stopped by SIGTERM, the drill leaves no server process and no data folder behind',
    async () => {
      const f = runFixture({ FIXTURE_MODE: 'server' });
      let info: { pid: number; dataDir: string } | null = null;
      try {
        await until(() => f.out().includes('"pid"') || f.child.exitCode !== null, START_TIMEOUT_MS, 'the drill server to start');
        info = JSON.parse(f.out().split('\n')[0]!) as { pid: number; dataDir: string };
        expect(alive(info.pid)).toBe(true);
        expect(fs.existsSync(info.dataDir)).toBe(true);
        f.child.kill('SIGTERM');
        expect(await f.exit).toBe(1);
        // The server was the drill's child: once killed it is reaped by init, so give that a bounded moment.
        await until(() => !alive(info!.pid), 5000, 'the server process to be gone').catch(() => undefined);
        expect(alive(info.pid)).toBe(false);
        expect(fs.existsSync(info.dataDir)).toBe(false);
      } finally {
        if (f.child.exitCode === null) f.child.kill('SIGKILL');
        if (info && alive(info.pid)) process.kill(info.pid, 'SIGKILL');
        if (info) fs.rmSync(info.dataDir, { recursive: true, force: true });
      }
    },
    START_TIMEOUT_MS + 30_000,
  );
});

describe('drill kit: the server command', () => {
  it('is tsx on src/main.ts by default, DRILL_SERVER_CMD when set (a leading node is this Node)', () => {
    expect(serverCommand(undefined)).toEqual({ cmd: process.execPath, args: ['--import', 'tsx', 'src/main.ts'] });
    expect(serverCommand('  ')).toEqual({ cmd: process.execPath, args: ['--import', 'tsx', 'src/main.ts'] });
    expect(serverCommand('node dist/main.js')).toEqual({ cmd: process.execPath, args: ['dist/main.js'] });
    expect(serverCommand('/usr/bin/env  node  --enable-source-maps dist/main.js')).toEqual({
      cmd: '/usr/bin/env',
      args: ['node', '--enable-source-maps', 'dist/main.js'],
    });
  });
});
