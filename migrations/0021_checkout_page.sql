ALTER TABLE "payment_requests" ADD COLUMN "checkout_token_hash" text;--> statement-breakpoint
ALTER TABLE "payment_requests" ADD COLUMN "checkout_token" text;--> statement-breakpoint
ALTER TABLE "payment_requests" ADD COLUMN "return_url" text;--> statement-breakpoint
ALTER TABLE "payment_requests" ADD CONSTRAINT "payment_requests_checkout_token_hash_unique" UNIQUE("checkout_token_hash");