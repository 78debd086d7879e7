import fs from 'node:fs';
import pg from 'pg';

/**
 * CPU time used by the whole local PostgreSQL server so far (ms): the postmaster, its live children (backends,
 * autovacuum, walwriter...) and the children that have exited (their time is in the postmaster's cutime/cstime, so a
 * pgbench run whose connections come and go is counted too). A difference of two readings is the database's CPU over
 * that window. Null when the server is not on this machine (no /proc entry).
 */
export async function pgServerCpuMs(serverUrl: string): Promise<number | null> {
  // Read while connected: our own backend names the postmaster (its parent).
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return cpuOf(rows[0]!.pid);
  } finally {
    await client.end();
  }
}

function cpuOf(backend: number): number | null {
  const tick = 1000 / 100; // USER_HZ is 100 on Linux
  const stat = (pid: number | string): string[] | null => {
    try {
      return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    } catch {
      return null;
    }
  };
  const mine = stat(backend);
  if (!mine) return null;
  const postmaster = Number(mine[1]);
  const pm = stat(postmaster);
  if (!pm) return null;
  // Fields after "(comm) ": [11] utime, [12] stime, [13] cutime, [14] cstime.
  let ticks = Number(pm[11]) + Number(pm[12]) + Number(pm[13]) + Number(pm[14]);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === backend) continue;
    const s = stat(entry);
    if (s && Number(s[1]) === postmaster) ticks += Number(s[11]) + Number(s[12]);
  }
  return ticks * tick;
}
