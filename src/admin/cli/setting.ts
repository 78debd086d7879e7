import { cmd, type Command, enc, get } from './kit.js';

/** The `setting` commands, in help order. */
export const settingCommands: readonly Command[] = [
  cmd({
    noun: 'setting',
    verb: 'list',
    usage: '',
    summary: 'every runtime setting (secret values masked)',
    call: () => get('/admin/v1/settings'),
  }),
  cmd({
    noun: 'setting',
    verb: 'get',
    usage: 'K',
    summary: 'one setting, unmasked',
    args: ['K'],
    call: ({ K }) => get(`/admin/v1/settings/${enc(K)}`),
  }),
  cmd({
    noun: 'setting',
    verb: 'set',
    usage: 'K V',
    summary: 'change a setting; V "" resets it to its default',
    args: ['K', 'V'],
    call: ({ K, V }) => ({ method: 'PUT', path: `/admin/v1/settings/${enc(K)}`, json: { value: V } }),
  }),
];
