import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's chromium (apt install chromium); CHROMIUM_PATH names another build. Known to work: Debian chromium 156 with
 * playwright-core 1.65.1 (package-lock.json). playwright-core downloads no browser and drives this one over the
 * DevTools protocol, which changes between chromium releases: if the launch or a page call fails with a protocol
 * error (an unknown method or parameter, a closed target) after an apt upgrade, compare `chromium --version` (.ci/run
 * prints it) with the browserVersion of chromium in node_modules/playwright-core/browsers.json (159 for 1.65.1, which
 * also drives Debian's 156), and move playwright-core to the release whose browserVersion is nearest to that chromium
 * (or point CHROMIUM_PATH at a build that matches the installed playwright-core).
 */
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
