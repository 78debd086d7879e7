-- The transfer note's canonical form (readableKey in src/shared/readable.ts; docs/payments.md, "The transfer note"):
-- letters and digits only, upper case, O as 0, I and L as 1, Z as 2. Bank-feed notes are matched on it, so that a note
-- typed with a look-alike still matches, older notes included; unique, so that no two requests share one form.
ALTER TABLE "payment_requests" ADD COLUMN "transfer_key" text GENERATED ALWAYS AS (translate(upper(regexp_replace(transfer_content, '[^A-Za-z0-9]', '', 'g')), 'OILZ', '0112')) STORED;--> statement-breakpoint
ALTER TABLE "payment_requests" ADD CONSTRAINT "payment_requests_transfer_key_unique" UNIQUE("transfer_key");