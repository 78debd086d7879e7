import { B, changes, cmd, type Command, defined, enc, get, post, required, S, str, usageError } from './kit.js';

/** The `pay method` commands, in help order. */
export const payMethodCommands: readonly Command[] = [
  cmd({
    noun: 'pay method',
    verb: 'create',
    usage: '--code C --bank-bin B --bank-name N --account-number A --account-name N [--bank-code X] [--name T] [--activate] [--default]',
    summary: 'new bank-transfer method, inactive unless --activate; --default makes it the default (needs --activate)',
    options: {
      code: S,
      'bank-bin': S,
      'bank-name': S,
      'account-number': S,
      'account-name': S,
      'bank-code': S,
      name: S,
      activate: B,
      default: B,
    },
    call: (_, o) => {
      if (o.default && !o.activate) throw usageError('--default needs --activate: an inactive method cannot be the default');
      return post(
        '/admin/v1/pay/methods',
        defined({
          code: required(o, 'code'),
          bank_bin: required(o, 'bank-bin'),
          bank_name: required(o, 'bank-name'),
          account_number: required(o, 'account-number'),
          account_name: required(o, 'account-name'),
          bank_code: str(o, 'bank-code'),
          name: str(o, 'name'),
          // Sent either way: without --activate the method is created inactive (the API alone would activate it).
          activate: o.activate === true,
          make_default: o.default ? true : undefined,
        }),
      );
    },
  }),
  cmd({
    noun: 'pay method',
    verb: 'list',
    usage: '',
    summary: 'all payment methods, inactive ones included',
    call: () => get('/admin/v1/pay/methods'),
  }),
  cmd({
    noun: 'pay method',
    verb: 'update',
    usage:
      'C [--name T] [--bank-bin B] [--bank-code X] [--bank-name N] [--account-number A] [--account-name N] [--activate|--deactivate] [--default]',
    summary: 'change a method; requests already prepared keep their bank data',
    args: ['C'],
    options: {
      name: S,
      'bank-bin': S,
      'bank-code': S,
      'bank-name': S,
      'account-number': S,
      'account-name': S,
      activate: B,
      deactivate: B,
      default: B,
    },
    call: ({ C }, o) => {
      if (o.activate && o.deactivate) throw usageError('Give --activate or --deactivate, not both');
      const body = changes({
        name: str(o, 'name'),
        bank_bin: str(o, 'bank-bin'),
        bank_code: str(o, 'bank-code'),
        bank_name: str(o, 'bank-name'),
        account_number: str(o, 'account-number'),
        account_name: str(o, 'account-name'),
        active: o.activate ? true : o.deactivate ? false : undefined,
        make_default: o.default ? true : undefined,
      });
      return { method: 'PATCH', path: `/admin/v1/pay/methods/${enc(C)}`, json: body };
    },
  }),
];
