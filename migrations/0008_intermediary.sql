CREATE TABLE "source_category_overrides" (
	"source_id" text PRIMARY KEY NOT NULL,
	"name" text,
	"hidden" boolean,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "source_overrides" (
	"source_id" text PRIMARY KEY NOT NULL,
	"price_adjust" numeric(18, 2),
	"fixed_price" numeric(18, 2),
	"name" text,
	"search_text" text,
	"description" text,
	"description2" text,
	"hidden" boolean,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "source_overrides_fixed_price" CHECK ("source_overrides"."fixed_price" IS NULL OR "source_overrides"."fixed_price" >= 0)
);
--> statement-breakpoint
CREATE TABLE "sync_runs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "sync_runs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"mode" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	"ok" boolean,
	"categories" integer DEFAULT 0 NOT NULL,
	"products" integer DEFAULT 0 NOT NULL,
	"created" integer DEFAULT 0 NOT NULL,
	"updated" integer DEFAULT 0 NOT NULL,
	"missing" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"watermark" timestamp with time zone,
	"error" text
);
--> statement-breakpoint
ALTER TABLE "categories" ADD COLUMN "source_id" text;--> statement-breakpoint
ALTER TABLE "categories" ADD COLUMN "missing" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "products" ADD COLUMN "source_id" text;--> statement-breakpoint
ALTER TABLE "products" ADD COLUMN "source_stock" integer;--> statement-breakpoint
ALTER TABLE "products" ADD COLUMN "source_status" text;--> statement-breakpoint
ALTER TABLE "products" ADD COLUMN "missing" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "upstream_order_code" text;--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "usage_checked_at" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "categories_source_id_uq" ON "categories" USING btree ("source_id");--> statement-breakpoint
CREATE UNIQUE INDEX "products_source_id_uq" ON "products" USING btree ("source_id");--> statement-breakpoint
CREATE INDEX "products_updated_idx" ON "products" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "orders_pending_idx" ON "orders" USING btree ("id") WHERE "orders"."status" = 'pending';