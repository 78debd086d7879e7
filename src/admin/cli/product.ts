import { B, cmd, type Command, defined, enc, get, int, type Opts, post, required, S, str, upload, usageError, visibility } from './kit.js';

const productFields = (opts: Opts) => ({
  name: str(opts, 'name'),
  price: str(opts, 'price'),
  min_qty: int(opts, 'min'),
  max_qty: int(opts, 'max'),
  description: str(opts, 'description'),
  description2: str(opts, 'description2'),
});

/** Every command, in help order. */

/** The `product` commands, in help order. */
export const productCommands: readonly Command[] = [
  cmd({
    noun: 'product',
    verb: 'create',
    usage:
      '--category ID --name N --price P [--type code|file|service] [--min 1] [--max 100] [--description T] [--description2 T] [--hidden]',
    summary: 'new local product',
    options: { category: S, name: S, price: S, type: S, min: S, max: S, description: S, description2: S, hidden: B },
    call: (_, o) =>
      post(
        '/admin/v1/products',
        defined({
          category_id: required(o, 'category'),
          ...productFields(o),
          name: required(o, 'name'),
          price: required(o, 'price'),
          type: str(o, 'type'),
          hidden: o.hidden ? true : undefined,
        }),
      ),
  }),
  cmd({
    noun: 'product',
    verb: 'update',
    usage: 'P [--name T] [--price P] [--min N] [--max N] [--description T] [--description2 T] [--category ID] [--hide|--show]',
    summary: 'change a local product',
    args: ['P'],
    options: { name: S, price: S, min: S, max: S, description: S, description2: S, category: S, hide: B, show: B },
    call: ({ P }, o) => {
      const body = defined({ ...productFields(o), category_id: str(o, 'category'), hidden: visibility(o) });
      if (Object.keys(body).length === 0) throw usageError('Nothing to change: give at least one option');
      return { method: 'PATCH', path: `/admin/v1/products/${enc(P)}`, json: body };
    },
  }),
  cmd({
    noun: 'product',
    verb: 'list',
    usage: '',
    summary: 'all products, local and source ("source":"api"), hidden ones included',
    call: () => get('/admin/v1/products'),
  }),
  cmd({
    noun: 'product',
    verb: 'attach-file',
    usage: 'P FILE',
    summary: 'attach FILE (e.g. a ZIP) to a file product, streamed; prints the file record with its sha256',
    args: ['P', 'FILE'],
    call: ({ P, FILE }) =>
      upload(
        `/admin/v1/products/${enc(P)}/files`,
        FILE,
        FILE.toLowerCase().endsWith('.zip') ? 'application/zip' : 'application/octet-stream',
        'give the file to attach',
      ),
  }),
  cmd({
    noun: 'product',
    verb: 'files',
    usage: 'P',
    summary: 'files attached to a product',
    args: ['P'],
    call: ({ P }) => get(`/admin/v1/products/${enc(P)}/files`),
  }),
];
