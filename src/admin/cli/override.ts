import { B, changes, cmd, type Command, enc, get, type Opts, post, S, str, usageError, visibility } from './kit.js';

/** --markup N sets, --clear-markup removes (an empty --markup is refused: an unset shell variable must not clear it). */
function markupOf(o: Opts): string | null | undefined {
  const m = str(o, 'markup');
  if (m !== undefined && o['clear-markup']) throw usageError('Give --markup or --clear-markup, not both');
  if (o['clear-markup']) return null;
  if (m !== undefined && m.trim() === '') throw usageError('--markup needs a percentage; --clear-markup removes it');
  return m?.trim();
}

/** The `override` commands, in help order. */
export const overrideCommands: readonly Command[] = [
  cmd({
    noun: 'override',
    verb: 'set',
    usage: 'P [--price-adjust N] [--fixed-price N] [--name T] [--description T] [--description2 T] [--hide|--show]',
    summary:
      'override a source product (P = the id the public API shows; a negative adjustment: --price-adjust=-500); a sync never touches overrides',
    args: ['P'],
    options: { 'price-adjust': S, 'fixed-price': S, name: S, description: S, description2: S, hide: B, show: B },
    call: ({ P }, o) => ({
      method: 'PUT',
      path: `/admin/v1/overrides/${enc(P)}`,
      json: changes({
        price_adjust: str(o, 'price-adjust')?.trim(),
        fixed_price: str(o, 'fixed-price')?.trim(),
        name: str(o, 'name'),
        description: str(o, 'description'),
        description2: str(o, 'description2'),
        hidden: visibility(o),
      }),
    }),
  }),
  cmd({
    noun: 'override',
    verb: 'clear',
    usage: 'P',
    summary: 'remove every override of a source product',
    args: ['P'],
    call: ({ P }) => post(`/admin/v1/overrides/${enc(P)}/clear`),
  }),
  cmd({
    noun: 'override',
    verb: 'list',
    usage: '',
    summary: 'overrides of source products and categories',
    call: () => get('/admin/v1/overrides'),
  }),
  cmd({
    noun: 'override',
    verb: 'category',
    usage: 'C [--name T] [--hide|--show] [--markup N|--clear-markup]',
    summary:
      "rename, hide or mark up a source category (C = the id the public API shows); --markup N replaces price_markup_percent for its products (a product's own override still wins), --clear-markup goes back to it",
    args: ['C'],
    options: { name: S, hide: B, show: B, markup: S, 'clear-markup': B },
    call: ({ C }, o) => ({
      method: 'PUT',
      path: `/admin/v1/category-overrides/${enc(C)}`,
      json: changes({ name: str(o, 'name'), hidden: visibility(o), markup_percent: markupOf(o) }),
    }),
  }),
];
