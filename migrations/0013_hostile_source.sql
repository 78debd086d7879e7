-- A source site is untrusted input (docs/operations.md, "Source limits"): a staging table so that a sync holds one page in
-- memory, why a source order is still pending and when it was flagged, why a sync skipped or cleaned records, and
-- bank-feed notes that match two open requests (ambiguous).
CREATE UNLOGGED TABLE "sync_staging" (
	"run_id" bigint NOT NULL,
	"seq" integer NOT NULL,
	"source_id" text NOT NULL,
	"gone" boolean DEFAULT false NOT NULL,
	"category_source_id" text,
	"name" text,
	"search_text" text,
	"type" text,
	"price" numeric(18, 2),
	"min_qty" integer,
	"max_qty" integer,
	"description" text,
	"description2" text,
	"stock" integer,
	"status" text,
	CONSTRAINT "sync_staging_run_id_seq_pk" PRIMARY KEY("run_id","seq")
);
--> statement-breakpoint
ALTER TABLE "bank_transactions" DROP CONSTRAINT "bank_transactions_status";--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "upstream_issue" text;--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "upstream_attempted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "upstream_stuck_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sync_runs" ADD COLUMN "error_code" text;--> statement-breakpoint
ALTER TABLE "sync_runs" ADD COLUMN "skipped_reasons" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "sync_runs" ADD COLUMN "cleaned_reasons" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "bank_transactions" ADD CONSTRAINT "bank_transactions_status" CHECK ("bank_transactions"."status" IN ('approved', 'unmatched', 'amount_mismatch', 'late', 'ignored', 'ambiguous'));