import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { paymentMethods } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import { DomainError } from '../shared/domain-error.js';

export type MethodRow = typeof paymentMethods.$inferSelect;
export type MethodView = {
  code: string;
  name: string;
  bank_bin: string;
  bank_code: string;
  bank_name: string;
  account_number: string;
  account_name: string;
  active: boolean;
  is_default: boolean;
};

export type MethodInput = {
  code: string;
  name?: string;
  bank_bin: string;
  bank_code?: string;
  bank_name: string;
  account_number: string;
  account_name: string;
  activate?: boolean;
  make_default?: boolean;
};

function methodView(m: MethodRow): MethodView {
  return {
    code: m.code,
    name: m.name,
    bank_bin: m.bankBin,
    bank_code: m.bankCode,
    bank_name: m.bankName,
    account_number: m.accountNumber,
    account_name: m.accountName,
    active: m.active,
    is_default: m.isDefault,
  };
}

const bad = (message: string, path: string): DomainError => new DomainError('invalid', message, { path });

/** Bank-transfer payment methods: at most one default, which must be active. */
export function createMethodsService(deps: { db: Db }) {
  const { db } = deps;

  function check(input: Partial<MethodInput>): void {
    if (input.code !== undefined && !/^[A-Za-z0-9_-]{1,32}$/.test(input.code))
      throw bad('code must be 1-32 letters, digits, _ or -', 'code');
    if (input.bank_bin !== undefined && !/^\d{6}$/.test(input.bank_bin))
      throw bad('bank_bin must be the 6-digit NAPAS BIN of the bank', 'bank_bin');
    if (input.account_number !== undefined && !/^[0-9A-Za-z]{1,19}$/.test(input.account_number))
      throw bad('account_number must be 1-19 letters or digits', 'account_number');
    if (input.account_name !== undefined && (input.account_name.trim() === '' || input.account_name.length > 100))
      throw bad('account_name must be 1-100 characters', 'account_name');
    if (input.bank_name !== undefined && (input.bank_name.trim() === '' || input.bank_name.length > 100))
      throw bad('bank_name must be 1-100 characters', 'bank_name');
  }

  return {
    /** Creates a method; with make_default (or when there is no default yet and it is active) it becomes the default. */
    async create(input: MethodInput): Promise<MethodView> {
      check(input);
      return withTx(db, async (tx) => {
        const exists = await tx.select({ id: paymentMethods.id }).from(paymentMethods).where(eq(paymentMethods.code, input.code)).limit(1);
        if (exists[0]) throw new DomainError('conflict', `A payment method ${input.code} already exists`);
        // Active only when asked (`pay method create ... [--activate]`, docs/admin.md, "Payment clients, methods and payments").
        const active = input.activate ?? false;
        const [current] = await tx
          .select({ id: paymentMethods.id })
          .from(paymentMethods)
          .where(eq(paymentMethods.isDefault, true))
          .limit(1);
        const makeDefault = active && (input.make_default === true || !current);
        if (makeDefault && current) await tx.update(paymentMethods).set({ isDefault: false }).where(eq(paymentMethods.id, current.id));
        const [row] = await tx
          .insert(paymentMethods)
          .values({
            code: input.code,
            name: input.name?.trim() || `${input.bank_name.trim()} ${input.account_number}`,
            bankBin: input.bank_bin,
            bankCode: (input.bank_code ?? '').trim().toUpperCase(),
            bankName: input.bank_name.trim(),
            accountNumber: input.account_number,
            accountName: input.account_name.trim().toUpperCase(),
            active,
            isDefault: makeDefault,
          })
          .returning();
        return methodView(row!);
      });
    },
    async list(onlyActive = false): Promise<MethodView[]> {
      const rows = await db
        .select()
        .from(paymentMethods)
        .where(onlyActive ? eq(paymentMethods.active, true) : sql`true`)
        .orderBy(asc(paymentMethods.id));
      return rows.map(methodView);
    },
    /** Changes a method; requests already prepared keep their own snapshot of the bank data. */
    async update(code: string, patch: Partial<Omit<MethodInput, 'code'>> & { active?: boolean }): Promise<MethodView> {
      check(patch);
      return withTx(db, async (tx) => {
        const [m] = await tx.select().from(paymentMethods).where(eq(paymentMethods.code, code)).for('update').limit(1);
        if (!m) throw new DomainError('not_found', `No payment method ${JSON.stringify(code)}`);
        const active = patch.active ?? patch.activate ?? m.active;
        // As on creation: the first active method becomes the default when there is none.
        const [current] = await tx
          .select({ id: paymentMethods.id })
          .from(paymentMethods)
          .where(eq(paymentMethods.isDefault, true))
          .limit(1);
        if (active && !current) patch = { ...patch, make_default: true };
        if (patch.make_default) {
          if (!active) throw bad('an inactive method cannot be the default', 'make_default');
          await tx
            .update(paymentMethods)
            .set({ isDefault: false })
            .where(and(eq(paymentMethods.isDefault, true), sql`${paymentMethods.id} <> ${m.id}`));
        }
        const [row] = await tx
          .update(paymentMethods)
          .set({
            ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
            ...(patch.bank_bin !== undefined ? { bankBin: patch.bank_bin } : {}),
            ...(patch.bank_code !== undefined ? { bankCode: patch.bank_code.trim().toUpperCase() } : {}),
            ...(patch.bank_name !== undefined ? { bankName: patch.bank_name.trim() } : {}),
            ...(patch.account_number !== undefined ? { accountNumber: patch.account_number } : {}),
            ...(patch.account_name !== undefined ? { accountName: patch.account_name.trim().toUpperCase() } : {}),
            active,
            // Deactivating the default leaves no default until the admin names one.
            isDefault: patch.make_default ? true : active ? m.isDefault : false,
            updatedAt: sql<Date>`now()`,
          })
          .where(eq(paymentMethods.id, m.id))
          .returning();
        return methodView(row!);
      });
    },
    /** The method a request uses: the named one if active, else the active default. */
    async resolve(code: string | undefined): Promise<MethodRow | null> {
      const rows = code
        ? await db
            .select()
            .from(paymentMethods)
            .where(and(eq(paymentMethods.code, code), eq(paymentMethods.active, true)))
            .limit(1)
        : await db
            .select()
            .from(paymentMethods)
            .where(and(eq(paymentMethods.isDefault, true), eq(paymentMethods.active, true)))
            .limit(1);
      return rows[0] ?? null;
    },
  };
}

export type MethodsService = ReturnType<typeof createMethodsService>;
