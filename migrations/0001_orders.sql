CREATE TABLE "api_nonces" (
	"user_id" integer NOT NULL,
	"nonce" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "api_nonces_user_id_nonce_pk" PRIMARY KEY("user_id","nonce")
);
--> statement-breakpoint
CREATE TABLE "orders" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "orders_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"order_code" text NOT NULL,
	"user_id" integer NOT NULL,
	"request_id" text,
	"product_id" integer NOT NULL,
	"product_name" text NOT NULL,
	"product_type" text NOT NULL,
	"quantity" integer NOT NULL,
	"unit_price" numeric(18, 2) NOT NULL,
	"total" numeric(18, 2) NOT NULL,
	"status" text NOT NULL,
	"message" text DEFAULT '' NOT NULL,
	"delivered_at" timestamp with time zone,
	"refunded_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "orders_status" CHECK ("orders"."status" IN ('pending', 'success', 'failed', 'refunded')),
	CONSTRAINT "orders_quantity_positive" CHECK ("orders"."quantity" >= 1)
);
--> statement-breakpoint
ALTER TABLE "api_nonces" ADD CONSTRAINT "api_nonces_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_product_id_products_id_fk" FOREIGN KEY ("product_id") REFERENCES "public"."products"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_nonces_expires_idx" ON "api_nonces" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "orders_code_uq" ON "orders" USING btree ("order_code");--> statement-breakpoint
CREATE UNIQUE INDEX "orders_user_request_uq" ON "orders" USING btree ("user_id","request_id");--> statement-breakpoint
CREATE INDEX "orders_user_created_idx" ON "orders" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "codes_order_idx" ON "codes" USING btree ("order_id");