import { B, cmd, type Command, enc, post, upload } from './kit.js';

/** The `codes` commands, in help order. */
export const codesCommands: readonly Command[] = [
  cmd({
    noun: 'codes',
    verb: 'import',
    usage: 'P FILE',
    summary: 'add codes from FILE (one a line; duplicates skipped)',
    args: ['P', 'FILE'],
    call: ({ P, FILE }) => upload(`/admin/v1/products/${enc(P)}/codes`, FILE, 'text/plain', 'give a text file with one code a line'),
  }),
  cmd({
    noun: 'codes',
    verb: 'mark-used',
    usage: 'CODE... [--unused]',
    summary: 'mark codes used (--unused undoes it); prints {marked, not_found}',
    args: ['CODE'],
    variadic: true,
    options: { unused: B },
    call: (_, o, codes) => post('/admin/v1/codes/mark-used', { codes, used: !o.unused }),
  }),
];
