import { B, cmd, type Command, get, post } from './kit.js';

/** The `sync` commands, in help order. */
export const syncCommands: readonly Command[] = [
  cmd({
    noun: 'sync',
    verb: 'run',
    usage: '[--force] [--full]',
    summary:
      'run the catalogue sync now; --force ignores sync_interval_seconds; --full ignores the delta watermark and reads the whole source catalogue; a failed run exits 1',
    options: { force: B, full: B },
    // As long as the server lets the run take (the setting's largest value when it cannot be read), plus a margin.
    call: (_, o) => ({
      ...post('/admin/v1/sync/run', { force: o.force === true, full: o.full === true }),
      waitsFor: { setting: 'sync_run_timeout_seconds', marginSeconds: 60, fallbackSeconds: 3600 },
    }),
  }),
  cmd({
    noun: 'sync',
    verb: 'status',
    usage: '',
    summary: 'the last catalogue sync runs, newest first',
    call: () => get('/admin/v1/sync/status'),
  }),
];
