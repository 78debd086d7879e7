import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (apt install chromium); CHROMIUM_PATH names another build. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags of every test browser: headless, no sandbox (containers), and nothing that talks to Google on its own. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Whether the browser tests can run; in CI (CI=true) a missing chromium is a failure, not a skip. */
export function chromiumAvailable(): boolean {
  return fs.existsSync(CHROMIUM_PATH);
}

/**
 * One chromium for a test file. playwright-core's launch gives it a fresh user-data-dir of its own (a new temporary
 * folder, removed when the browser closes; it refuses a --user-data-dir flag for that reason).
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}
