import { cmd, type Command, post } from './kit.js';

/** The `demo` commands, in help order. */
export const demoCommands: readonly Command[] = [
  cmd({
    noun: 'demo',
    verb: 'seed',
    usage: '',
    summary: 'demo user, categories, products and codes, with curl commands to try',
    progress: 'seeding the demo data (a few seconds)...',
    call: () => post('/admin/v1/demo/seed'),
  }),
];
