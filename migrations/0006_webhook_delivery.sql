CREATE TABLE "bank_transactions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "bank_transactions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"feed" text NOT NULL,
	"transaction_id" text NOT NULL,
	"reference" text,
	"amount" numeric(18, 2) NOT NULL,
	"content" text NOT NULL,
	"account_number" text,
	"direction" text NOT NULL,
	"status" text NOT NULL,
	"payment_request_id" bigint,
	"transaction_date" text,
	"body" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "bank_transactions_feed" CHECK ("bank_transactions"."feed" IN ('sepay', 'casso')),
	CONSTRAINT "bank_transactions_direction" CHECK ("bank_transactions"."direction" IN ('in', 'out')),
	CONSTRAINT "bank_transactions_status" CHECK ("bank_transactions"."status" IN ('approved', 'unmatched', 'amount_mismatch', 'late', 'ignored'))
);
--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_attempts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"outbox_id" bigint NOT NULL,
	"attempt" integer NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"status_code" integer,
	"latency_ms" integer NOT NULL,
	"response" text,
	"error" text
);
--> statement-breakpoint
ALTER TABLE "webhook_outbox" ADD COLUMN "retry_base" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "bank_transactions" ADD CONSTRAINT "bank_transactions_payment_request_id_payment_requests_id_fk" FOREIGN KEY ("payment_request_id") REFERENCES "public"."payment_requests"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_outbox_id_webhook_outbox_id_fk" FOREIGN KEY ("outbox_id") REFERENCES "public"."webhook_outbox"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "bank_transactions_feed_tx_uq" ON "bank_transactions" USING btree ("feed","transaction_id");--> statement-breakpoint
CREATE INDEX "bank_transactions_status_idx" ON "bank_transactions" USING btree ("status","id");--> statement-breakpoint
CREATE INDEX "webhook_attempts_outbox_idx" ON "webhook_attempts" USING btree ("outbox_id","id");