import fs from 'node:fs';
import { onAbort, runDrill, startServer } from '../../scripts/drills/kit.js';

/**
 * A drill that never ends, for the test of the drill kit's clean-up (test/foundation/drill-kit.test.ts).
 * FIXTURE_MODE=bound: registers a clean-up that writes FIXTURE_MARKER, then hangs past FIXTURE_BOUND_MS.
 * FIXTURE_MODE=server: starts a real server process, prints its pid and DATA_DIR, then hangs until signalled.
 */
runDrill('fixture', Number(process.env.FIXTURE_BOUND_MS ?? 180_000), async () => {
  if (process.env.FIXTURE_MODE === 'bound') onAbort(() => fs.writeFileSync(process.env.FIXTURE_MARKER!, 'cleaned'));
  else {
    const s = await startServer({});
    process.stdout.write(`${JSON.stringify({ pid: s.pid, dataDir: s.dataDir })}\n`);
  }
  await new Promise(() => setInterval(() => undefined, 1000));
});
