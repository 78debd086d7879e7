import { cmd, type Command, get, post } from './kit.js';

/** The `guard` commands, in help order. */
export const guardCommands: readonly Command[] = [
  cmd({
    noun: 'guard',
    verb: 'list',
    usage: '',
    summary: 'keys (key:<user id>) and addresses (ip:<addr>) under api_guard now',
    call: () => get('/admin/v1/guard'),
  }),
  cmd({
    noun: 'guard',
    verb: 'clear',
    usage: '',
    summary: 'lift every current api_guard; prints {cleared}',
    call: () => post('/admin/v1/guard/clear'),
  }),
];
