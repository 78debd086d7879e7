CREATE TABLE "pay_clients" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "pay_clients_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"name" text NOT NULL,
	"domain" text NOT NULL,
	"webhook_url" text NOT NULL,
	"status" text DEFAULT 'requested' NOT NULL,
	"allowed_ips" text[] DEFAULT '{}'::text[] NOT NULL,
	"api_key_hash" text,
	"api_key_enc" text,
	"api_secret_enc" text,
	"prev_api_secret_enc" text,
	"prev_secret_expires_at" timestamp with time zone,
	"webhook_secret_enc" text,
	"allow_private_targets" boolean DEFAULT false NOT NULL,
	"events" text[] DEFAULT '{payment.approved}'::text[] NOT NULL,
	"approved_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "pay_clients_api_key_hash_unique" UNIQUE("api_key_hash"),
	CONSTRAINT "pay_clients_status" CHECK ("pay_clients"."status" IN ('requested', 'active', 'disabled'))
);
--> statement-breakpoint
CREATE TABLE "payment_idempotency" (
	"client_id" integer NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"payment_id" text,
	"state" text DEFAULT 'in_progress' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "payment_idempotency_client_id_key_pk" PRIMARY KEY("client_id","key")
);
--> statement-breakpoint
CREATE TABLE "payment_methods" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "payment_methods_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"code" text NOT NULL,
	"name" text NOT NULL,
	"bank_bin" text NOT NULL,
	"bank_code" text NOT NULL,
	"bank_name" text NOT NULL,
	"account_number" text NOT NULL,
	"account_name" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payment_methods_code_unique" UNIQUE("code")
);
--> statement-breakpoint
CREATE TABLE "payment_requests" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "payment_requests_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"payment_id" text NOT NULL,
	"client_id" integer NOT NULL,
	"merchant_invoice_id" text NOT NULL,
	"amount" numeric(18, 2) NOT NULL,
	"currency" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"method_code" text NOT NULL,
	"status" text NOT NULL,
	"bank_bin" text,
	"bank_code" text,
	"bank_name" text,
	"account_number" text,
	"account_name" text,
	"transfer_content" text,
	"qr_content" text,
	"qr_image" text,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payment_requests_payment_id_unique" UNIQUE("payment_id"),
	CONSTRAINT "payment_requests_transfer_content_unique" UNIQUE("transfer_content"),
	CONSTRAINT "payment_requests_status" CHECK ("payment_requests"."status" IN ('preparing_payment', 'pending_payment', 'payment_reported', 'approved', 'rejected', 'expired', 'cancelled')),
	CONSTRAINT "payment_requests_amount_positive" CHECK ("payment_requests"."amount" > 0)
);
--> statement-breakpoint
CREATE TABLE "payment_transitions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "payment_transitions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"payment_request_id" bigint NOT NULL,
	"from_status" text,
	"to_status" text NOT NULL,
	"actor" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"event_id" text NOT NULL,
	"client_id" integer NOT NULL,
	"event" text NOT NULL,
	"payment_request_id" bigint,
	"body" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_error" text,
	"delivered_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_outbox_event_id_unique" UNIQUE("event_id"),
	CONSTRAINT "webhook_outbox_status" CHECK ("webhook_outbox"."status" IN ('pending', 'delivered', 'dead'))
);
--> statement-breakpoint
ALTER TABLE "payment_idempotency" ADD CONSTRAINT "payment_idempotency_client_id_pay_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."pay_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_requests" ADD CONSTRAINT "payment_requests_client_id_pay_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."pay_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_transitions" ADD CONSTRAINT "payment_transitions_payment_request_id_payment_requests_id_fk" FOREIGN KEY ("payment_request_id") REFERENCES "public"."payment_requests"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_outbox" ADD CONSTRAINT "webhook_outbox_client_id_pay_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."pay_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_outbox" ADD CONSTRAINT "webhook_outbox_payment_request_id_payment_requests_id_fk" FOREIGN KEY ("payment_request_id") REFERENCES "public"."payment_requests"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "payment_idempotency_expires_idx" ON "payment_idempotency" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "payment_methods_one_default" ON "payment_methods" USING btree ("is_default") WHERE "payment_methods"."is_default";--> statement-breakpoint
CREATE UNIQUE INDEX "payment_requests_open_invoice_uq" ON "payment_requests" USING btree ("client_id","merchant_invoice_id") WHERE "payment_requests"."status" IN ('preparing_payment', 'pending_payment', 'payment_reported');--> statement-breakpoint
CREATE INDEX "payment_requests_due_idx" ON "payment_requests" USING btree ("status","expires_at");--> statement-breakpoint
CREATE INDEX "payment_transitions_request_idx" ON "payment_transitions" USING btree ("payment_request_id","id");--> statement-breakpoint
CREATE INDEX "webhook_outbox_due_idx" ON "webhook_outbox" USING btree ("next_attempt_at") WHERE "webhook_outbox"."status" = 'pending';