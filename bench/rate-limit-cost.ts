import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';

// What @fastify/rate-limit adds to one request, with the options src/http/rate-limit.ts gives it (preParsing, the
// in-memory store, draft-spec headers, an async `max`): server CPU µs per `inject` of a one-route Fastify app without
// and with the plugin, alternating. inject has no socket, so the figures are larger than the table's per request; the
// difference between the two is the plugin's.
//   npx tsx bench/rate-limit-cost.ts [requests=30000]
const n = Number(process.argv[2] ?? 30_000);

async function build(withLimit: boolean) {
  const app = Fastify();
  if (withLimit) {
    await app.register(rateLimit, {
      global: true,
      hook: 'preParsing',
      timeWindow: 60_000,
      max: async () => 1_000_000,
      keyGenerator: () => 'key:1',
      skipOnError: true,
      enableDraftSpec: true,
    });
  }
  app.get('/x', async () => 'ok');
  await app.ready();
  return app;
}

for (const withLimit of [false, true, false, true]) {
  const app = await build(withLimit);
  for (let i = 0; i < 3000; i++) await app.inject('/x');
  const start = process.cpuUsage();
  for (let i = 0; i < n; i += 20) await Promise.all(Array.from({ length: 20 }, () => app.inject('/x')));
  const used = process.cpuUsage(start);
  console.log(`${withLimit ? 'with the rate limit' : 'without         '}  ${((used.user + used.system) / n).toFixed(1)} µs/request`);
  await app.close();
}
