const formatters = new Map<string, Intl.DateTimeFormat>();

/** DD/MM/YYYY HH:MM:SS in the given IANA time zone (the spec's used_at format). */
export function formatDisplayTime(d: Date, timeZone: string): string {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(d).map((x) => [x.type, x.value]));
  return `${p.day}/${p.month}/${p.year} ${p.hour}:${p.minute}:${p.second}`;
}

/** The reverse of formatDisplayTime: DD/MM/YYYY HH:MM:SS read as a wall time in `timeZone`; null when malformed. */
export function parseDisplayTime(s: string, timeZone: string): Date | null {
  const m = /^(\d{2})\/(\d{2})\/(\d{4}) (\d{2}):(\d{2}):(\d{2})$/.exec(s.trim());
  if (!m) return null;
  const [, dd, mm, yyyy, hh, mi, ss] = m.map(Number) as number[];
  const asUtc = Date.UTC(yyyy!, mm! - 1, dd!, hh!, mi!, ss!);
  // The zone's offset at that instant: format the UTC guess in the zone and measure the difference (twice, for DST edges).
  let t = asUtc;
  for (let i = 0; i < 2; i++) {
    const shown = formatDisplayTime(new Date(t), timeZone);
    const [d, time] = shown.split(' ') as [string, string];
    const [sd, sm, sy] = d.split('/').map(Number) as number[];
    const [sh, smi, ss2] = time.split(':').map(Number) as number[];
    t += asUtc - Date.UTC(sy!, sm! - 1, sd!, sh!, smi!, ss2!);
  }
  // Date.UTC rolls 31/02 over to 03/03 and 99:99 into the next days: only a time that formats back to itself is real
  // (the text comes from the source site, which we do not trust to be well-formed).
  const d = new Date(t);
  return formatDisplayTime(d, timeZone) === s.trim() ? d : null;
}
