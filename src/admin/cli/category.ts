import { cmd, type Command, defined, get, int, post, required, S, str } from './kit.js';

/** The `category` commands, in help order. */
export const categoryCommands: readonly Command[] = [
  cmd({
    noun: 'category',
    verb: 'create',
    usage: '--name N [--parent ID] [--sort N]',
    summary: 'new local category',
    options: { name: S, parent: S, sort: S },
    call: (_, o) => post('/admin/v1/categories', defined({ name: required(o, 'name'), parent_id: str(o, 'parent'), sort: int(o, 'sort') })),
  }),
  cmd({ noun: 'category', verb: 'list', usage: '', summary: 'all categories', call: () => get('/admin/v1/categories') }),
];
