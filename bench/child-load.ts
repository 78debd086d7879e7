import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// autocannon's CLI in a child process, for benches that count their own process's CPU as the server's: the load
// generator's CPU then stays out of the figure.
const AUTOCANNON = path.join(path.dirname(fileURLToPath(import.meta.url)), '../node_modules/autocannon/autocannon.js');

export type ChildLoad = { '2xx': number; non2xx: number; errors: number; requests: { total: number; average: number } };

/** One autocannon run against `url` with `options` (its CLI flags, e.g. ['-c', '50', '-d', '3']); its JSON result. */
export function childLoad(url: string, options: string[], headers: Record<string, string> = {}): Promise<ChildLoad> {
  const args = [AUTOCANNON, '-j', ...options];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      try {
        resolve(JSON.parse(out) as ChildLoad);
      } catch {
        reject(new Error(`autocannon against ${url} exited with ${code} and no JSON result`));
      }
    });
  });
}

/** Exactly `n` requests over `connections` connections; throws unless every answer was a 2xx. */
export async function childRequests(url: string, n: number, connections: number, headers: Record<string, string> = {}): Promise<void> {
  const r = await childLoad(url, ['-c', String(connections), '-a', String(n)], headers);
  if (r['2xx'] !== n || r.non2xx + r.errors > 0)
    throw new Error(`${url}: ${r['2xx']} 2xx of ${n}, ${r.non2xx} non-2xx, ${r.errors} errors`);
}
