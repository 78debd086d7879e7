-- Sessions of the admin console (docs/console.md): only the SHA-256 of the session id is kept, so a copy of this table
-- opens no session. csrf_token is the token of the session's forms (useless without the cookie). expires_at moves
-- forward on every request by console_session_minutes (idle expiry); sign-out deletes the row.
CREATE TABLE "console_sessions" (
	"id_digest" text PRIMARY KEY NOT NULL,
	"csrf_token" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"last_seen" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);--> statement-breakpoint
CREATE INDEX "console_sessions_expires_idx" ON "console_sessions" USING btree ("expires_at");
--> statement-breakpoint
-- The console's dashboard counts today's orders and payments and the last 24 hours by hour (src/ops/dashboard.ts): a
-- range on created_at. Rows arrive in created_at order, so each insert appends to the index's rightmost page
-- (docs/PERFORMANCE.md, "Console").
CREATE INDEX "orders_created_idx" ON "orders" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "payment_requests_created_idx" ON "payment_requests" USING btree ("created_at");
