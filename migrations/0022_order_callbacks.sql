ALTER TABLE "webhook_outbox" ALTER COLUMN "client_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "callback_url" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "callback_secret_enc" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "allow_private_targets" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_outbox" ADD COLUMN "user_id" integer;--> statement-breakpoint
ALTER TABLE "webhook_outbox" ADD COLUMN "order_id" bigint;--> statement-breakpoint
ALTER TABLE "webhook_outbox" ADD CONSTRAINT "webhook_outbox_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_outbox" ADD CONSTRAINT "webhook_outbox_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_outbox_user_due_idx" ON "webhook_outbox" USING btree ("user_id","next_attempt_at","id") WHERE "webhook_outbox"."status" = 'pending' AND "webhook_outbox"."user_id" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_outbox" ADD CONSTRAINT "webhook_outbox_one_target" CHECK (("webhook_outbox"."client_id" IS NULL) <> ("webhook_outbox"."user_id" IS NULL));