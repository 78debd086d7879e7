-- The transfer note's canonical form (readableKey in src/shared/readable.ts; docs/payments.md, "The transfer note"):
-- letters and digits only, upper case, O as 0, I and L as 1, Z as 2. Bank-feed notes are matched on it, so that a note
-- typed with a look-alike still matches, older notes included; unique, so that no two requests share one form.
ALTER TABLE "payment_requests" ADD COLUMN "transfer_key" text GENERATED ALWAYS AS (translate(upper(regexp_replace(transfer_content, '[^A-Za-z0-9]', '', 'g')), 'OILZ', '0112')) STORED;--> statement-breakpoint
-- Notes drawn before the canonical form (any of 0-9A-Z) may already share one: the migration must not fail on them, nor
-- change a note a payer may still be typing. Then the oldest request of each shared form stays under a unique index
-- and the others (the legacy duplicates, listed by id in the index's predicate) are left out of it: every new note is
-- still refused a form any request holds. A plain index serves the bank feeds' lookup, which must see every row
-- (docs/payments.md, "The transfer note"; docs/tables.md, payment_requests).
DO $$
DECLARE
  legacy bigint[];
BEGIN
  BEGIN
    ALTER TABLE "payment_requests" ADD CONSTRAINT "payment_requests_transfer_key_unique" UNIQUE("transfer_key");
  EXCEPTION WHEN unique_violation THEN
    SELECT array_agg(id ORDER BY id) INTO legacy
      FROM (SELECT id, row_number() OVER (PARTITION BY transfer_key ORDER BY id) AS nth
              FROM "payment_requests" WHERE transfer_key IS NOT NULL) r
     WHERE nth > 1;
    EXECUTE format('CREATE UNIQUE INDEX "payment_requests_transfer_key_unique" ON "payment_requests" ("transfer_key") WHERE id <> ALL (%L::bigint[])', legacy);
    CREATE INDEX "payment_requests_transfer_key_idx" ON "payment_requests" ("transfer_key");
    RAISE WARNING 'payment_requests: % request(s) share a transfer_key with an older one (ids %): their notes are kept, left out of the unique index, and a bank-feed note naming two open ones is ambiguous', cardinality(legacy), legacy;
  END;
END $$;
