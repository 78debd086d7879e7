-- The sandbox of the ordering API (docs/sandbox-ordering.md): a test key and a test balance per user, and a `test`
-- flag on the objects of the test world. A request_id is unique per user and world.
ALTER TABLE "users" ADD COLUMN "test_api_key_hash" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "test_api_key_enc" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "test_api_key_hint" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "test_balance" numeric(18, 2) DEFAULT '10000000' NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_test_api_key_hash_unique" UNIQUE("test_api_key_hash");--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_test_balance_non_negative" CHECK ("users"."test_balance" >= 0);--> statement-breakpoint
ALTER TABLE "balance_ledger" ADD COLUMN "test" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "test" boolean DEFAULT false NOT NULL;--> statement-breakpoint
DROP INDEX "orders_user_request_uq";--> statement-breakpoint
CREATE UNIQUE INDEX "orders_user_request_uq" ON "orders" USING btree ("user_id","request_id","test");--> statement-breakpoint
-- Order creation in one statement, for every product (docs/decisions.md, "One order function"). Its rules are the
-- catalogue's own: product_visible_at and product_shown_price at the markup of the product's source category
-- override, or else the one the caller read from the settings; hide_out_of_stock_source_products read from the
-- settings table as the catalogue reads it (src/catalog/queries.ts, default true when no row). A
-- local code or file product is claimed and ends `success`; a source product (not of type service) ends `pending`
-- with p_source_message, and the caller forwards it to the source site after the commit (src/sync/upstream.ts).
-- A refusal raises SQLSTATE RG001 with its reason as message (one of SQL_REFUSALS, src/ordering/refusals.ts) and a
-- detail: the statement rolls back whole. A NULL or negative markup is no refusal but the caller's bug
-- (price_markup_percent is 0 or more, src/settings/registry.ts): it raises RG002 before anything is read or written.
-- A request_id is looked up only when it can matter: on a refusal before anything is written (a replay answers its
-- order even if the product has become unavailable since) and when the order row's insert meets an existing one. A
-- new order, the common case, probes orders_user_request_uq once, in its insert (docs/PERFORMANCE.md, "Orders: CPU
-- per order").
-- Order of writes: the order row first (a racing duplicate request_id waits on its unique index and replays), then
-- the codes (SKIP LOCKED), and the balance last, so that the user's row is locked only until the commit that follows
-- at once. The claim is pinned to the partial index codes_available_idx: with one product holding most codes, the
-- planner's estimate made walking the primary key in id order look as cheap, and every order then crossed all the
-- codes sold before it. Ordering by (product_id, id) under a range condition is an order only that index provides
-- (test/orders/claim-plan.test.ts). It starts after the last code the connection sold of the product, so that it does
-- not read the dead entries the sold codes leave in that index until a vacuum (test/orders/order-plans.test.ts).
-- The request_id lookup is pinned to the unique index orders_user_request_uq the same way: a plan made while `orders`
-- was empty or never analysed took orders_user_created_idx (user_id, id) and filtered request_id, so every order read
-- all the earlier orders of its user. A range on request_id ordered by request_id is answered, without a sort, only by
-- (user_id, request_id); it is one row at most (test/orders/order-plans.test.ts). Only live orders are read and
-- written here: a test order of the same request_id is another world's (order_create_test, docs/sandbox-ordering.md).
-- The balance debit waits on an advisory lock of the user, not on the user's row: a row-lock waiter keeps the row's
-- page pinned, and a page pinned by another backend is never pruned, so under concurrent orders of one reseller the
-- updates stopped being HOT and the row spread over new pages and index entries. Orders of one user still queue, as
-- they did on the row, but no longer pin its page while they wait (docs/PERFORMANCE.md, "Orders that do not slow
-- down"). The payment creation's try-lock takes (client id, hash of its key) in the same key space: the two meet only
-- for a payment client id of 1919249506.
-- Every statement runs on the generic plan PL/pgSQL makes once per connection (the SET clause above). Left to choose,
-- PL/pgSQL kept planning the claim again on every order: its generic plan costs LIMIT p_quantity at a tenth of the
-- product's codes, far above a custom plan's LIMIT 1, so the generic plan never won, and planning the claim was about
-- a sixth of PostgreSQL's CPU per order (docs/PERFORMANCE.md, "What PostgreSQL does per order"). The generic plans are
-- the pinned ones the header describes (test/orders/claim-plan.test.ts, test/orders/order-plans.test.ts).
CREATE OR REPLACE FUNCTION order_create(
  p_user_id integer,
  p_request_id text,
  p_product_id integer,
  p_quantity integer,
  p_markup numeric,
  p_order_code text,
  p_codes_message text,
  p_files_message text,
  p_source_message text
) RETURNS SETOF orders
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_prod record;
  v_fulfilment text;
  v_total numeric;
  v_order orders;
  v_balance numeric(18, 2);
  v_claimed integer;
  v_hint text;
  v_after bigint;
  v_last bigint;
  v_more integer;
  v_more_last bigint;
  v_found boolean;
  v_refused boolean;
BEGIN
  IF p_markup IS NULL OR p_markup < 0 THEN
    RAISE EXCEPTION 'order_create: markup must be 0 or more, not %', COALESCE(p_markup::text, 'NULL') USING ERRCODE = 'RG002';
  END IF;
  SELECT COALESCE(po.name, p.name) AS name, p.type, sp.price, p.min_qty, p.max_qty, p.source_id,
         product_visible_at(p.hidden, p.missing, po.hidden, c.missing, co.hidden, p.source_id, p.source_stock, p.source_status,
                            COALESCE((SELECT lower(btrim(s.value)) IN ('true', '1', 'yes', 'on') FROM settings s
                                       WHERE s.key = 'hide_out_of_stock_source_products'), true),
                            sp.price) AS visible,
         EXISTS (SELECT 1 FROM product_files f WHERE f.product_id = p.id) AS has_files
    INTO v_prod
    FROM products p
    JOIN categories c ON c.id = p.category_id
    LEFT JOIN source_overrides po ON po.source_id = p.source_id
    LEFT JOIN source_category_overrides co ON co.source_id = c.source_id
    CROSS JOIN LATERAL (SELECT product_shown_price(p.source_id, p.price, po.fixed_price, po.price_adjust,
                                                  COALESCE(co.markup_percent, p_markup)) AS price) sp
   WHERE p.id = p_product_id;
  v_found := FOUND;
  -- A local file product sells its attached files: with none attached yet there is nothing to deliver. A service
  -- product is fulfilled by hand, never through the API (src/catalog/queries.ts, fulfilmentOf).
  v_fulfilment := CASE
    WHEN NOT v_found THEN 'none'
    WHEN v_prod.source_id IS NOT NULL THEN CASE WHEN v_prod.type = 'service' THEN 'none' ELSE 'source' END
    WHEN v_prod.type = 'code' THEN 'codes'
    WHEN v_prod.type = 'file' AND v_prod.has_files THEN 'files'
    ELSE 'none' END;
  -- Unbounded numeric: a total numeric(18,2) cannot hold is more than any balance, not a database error.
  v_total := CASE WHEN v_found THEN v_prod.price * p_quantity END;
  v_refused := NOT v_found OR NOT v_prod.visible OR v_fulfilment = 'none'
    OR p_quantity < v_prod.min_qty OR p_quantity > v_prod.max_qty OR v_total >= 10000000000000000::numeric;
  IF v_refused AND p_request_id IS NOT NULL THEN
    RETURN QUERY SELECT * FROM orders o
     WHERE o.user_id = p_user_id AND o.request_id >= p_request_id AND o.request_id <= p_request_id AND o.test = false
     ORDER BY o.request_id LIMIT 1;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;
  IF NOT v_found OR NOT v_prod.visible OR v_fulfilment = 'none' THEN
    RAISE EXCEPTION 'product_unavailable' USING ERRCODE = 'RG001';
  END IF;
  IF p_quantity < v_prod.min_qty OR p_quantity > v_prod.max_qty THEN
    RAISE EXCEPTION 'quantity_out_of_range' USING ERRCODE = 'RG001', DETAIL = format('allowed %s-%s', v_prod.min_qty, v_prod.max_qty);
  END IF;
  IF v_total >= 10000000000000000::numeric THEN
    RAISE EXCEPTION 'insufficient_balance' USING ERRCODE = 'RG001';
  END IF;

  INSERT INTO orders (order_code, user_id, request_id, product_id, product_name, product_type, quantity, unit_price, total, status, message)
  VALUES (p_order_code, p_user_id, p_request_id, p_product_id, v_prod.name, v_prod.type, p_quantity, v_prod.price, v_total,
          CASE WHEN v_fulfilment = 'source' THEN 'pending' ELSE 'success' END,
          CASE v_fulfilment WHEN 'codes' THEN p_codes_message WHEN 'files' THEN p_files_message ELSE p_source_message END)
  ON CONFLICT (user_id, request_id, test) DO NOTHING
  RETURNING * INTO v_order;
  IF NOT FOUND THEN
    -- A replay, or the racing request with this request_id that committed first (read committed: this statement sees it).
    RETURN QUERY SELECT * FROM orders o
       WHERE o.user_id = p_user_id AND o.request_id >= p_request_id AND o.request_id <= p_request_id AND o.test = false
       ORDER BY o.request_id LIMIT 1;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'request_id taken but no order found' USING ERRCODE = 'RG002';
    END IF;
    RETURN;
  END IF;

  IF v_fulfilment = 'codes' THEN
    -- The range on product_id (not "=") keeps product_id in the sort key, so only codes_available_idx can give this
    -- order: the planner cannot choose the primary key walk, which crosses every sold code first (see the header).
    -- The claim starts after the last code this connection sold of the product (a setting of the session, kept only
    -- if the transaction commits): the sold codes before it stay in codes_available_idx as dead entries until a
    -- vacuum, and a claim from the first code would read them all. When too few codes are left after it, the claim
    -- takes the rest from the first code on, which also sells the codes a refund or a rolled-back order put back.
    v_hint := 'order_create.claimed_' || p_product_id;
    -- Only a value this function wrote is used: anything else (a role's or a session's own SET) starts from the first code.
    v_after := CASE WHEN current_setting(v_hint, true) ~ '^[0-9]{1,18}$' THEN current_setting(v_hint, true)::bigint ELSE 0 END;
    WITH claimed AS (
      UPDATE codes SET status = 'sold', order_id = v_order.id
       WHERE id IN (SELECT k.id FROM codes k
                     WHERE k.product_id >= p_product_id AND k.product_id <= p_product_id AND k.status = 'available'
                       AND k.id > v_after
                     ORDER BY k.product_id, k.id LIMIT p_quantity FOR UPDATE SKIP LOCKED)
      RETURNING codes.id)
    SELECT count(*), max(claimed.id) INTO v_claimed, v_last FROM claimed;
    IF v_claimed < p_quantity AND v_after > 0 THEN
      WITH claimed AS (
        UPDATE codes SET status = 'sold', order_id = v_order.id
         WHERE id IN (SELECT k.id FROM codes k
                       WHERE k.product_id >= p_product_id AND k.product_id <= p_product_id AND k.status = 'available'
                       ORDER BY k.product_id, k.id LIMIT p_quantity - v_claimed FOR UPDATE SKIP LOCKED)
        RETURNING codes.id)
      SELECT count(*), max(claimed.id) INTO v_more, v_more_last FROM claimed;
      v_claimed := v_claimed + v_more;
      v_last := COALESCE(v_more_last, v_last);
    END IF;
    IF v_claimed < p_quantity THEN
      -- Same answer as when the balance was debited before the claim: a short balance is named first.
      IF NOT EXISTS (SELECT 1 FROM users u WHERE u.id = p_user_id AND u.balance >= v_total) THEN
        RAISE EXCEPTION 'insufficient_balance' USING ERRCODE = 'RG001';
      END IF;
      RAISE EXCEPTION 'out_of_stock' USING ERRCODE = 'RG001';
    END IF;
    PERFORM set_config(v_hint, v_last::text, false);
  END IF;

  PERFORM pg_advisory_xact_lock(1919249506, p_user_id);
  UPDATE users u SET balance = u.balance - v_total, updated_at = now()
   WHERE u.id = p_user_id AND u.balance >= v_total
  RETURNING u.balance INTO v_balance;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'insufficient_balance' USING ERRCODE = 'RG001';
  END IF;
  INSERT INTO balance_ledger (user_id, amount, balance_after, kind, ref, actor)
  VALUES (p_user_id, -v_total, v_balance, 'order', v_order.order_code, 'user:' || p_user_id);
  RETURN NEXT v_order;
END;
$$;
--> statement-breakpoint
-- A test order in one statement (docs/sandbox-ordering.md): the checks of order_create, read by the same catalogue
-- functions (product_visible_at, product_shown_price, the same settings row and the same refusals), but it claims no
-- code, calls no source site and moves only the test balance, with a ledger row marked test. A code product needs no
-- stock: its codes are derived when read (src/ordering/test-codes.ts). A source product's order stays `pending` until
-- the sandbox settle endpoint ends it. Its request_id is looked up among the user's test orders only. It takes the
-- advisory lock of the user that order_create takes, so that live and test orders of one user meet on the lock, not on
-- the user's row.
CREATE OR REPLACE FUNCTION order_create_test(
  p_user_id integer,
  p_request_id text,
  p_product_id integer,
  p_quantity integer,
  p_markup numeric,
  p_order_code text,
  p_codes_message text,
  p_files_message text,
  p_source_message text
) RETURNS SETOF orders
LANGUAGE plpgsql
AS $$
DECLARE
  v_prod record;
  v_fulfilment text;
  v_total numeric;
  v_order orders;
  v_balance numeric(18, 2);
  v_found boolean;
BEGIN
  IF p_markup IS NULL OR p_markup < 0 THEN
    RAISE EXCEPTION 'order_create_test: markup must be 0 or more, not %', COALESCE(p_markup::text, 'NULL') USING ERRCODE = 'RG002';
  END IF;
  SELECT COALESCE(po.name, p.name) AS name, p.type, sp.price, p.min_qty, p.max_qty, p.source_id,
         product_visible_at(p.hidden, p.missing, po.hidden, c.missing, co.hidden, p.source_id, p.source_stock, p.source_status,
                            COALESCE((SELECT lower(btrim(s.value)) IN ('true', '1', 'yes', 'on') FROM settings s
                                       WHERE s.key = 'hide_out_of_stock_source_products'), true),
                            sp.price) AS visible,
         EXISTS (SELECT 1 FROM product_files f WHERE f.product_id = p.id) AS has_files
    INTO v_prod
    FROM products p
    JOIN categories c ON c.id = p.category_id
    LEFT JOIN source_overrides po ON po.source_id = p.source_id
    LEFT JOIN source_category_overrides co ON co.source_id = c.source_id
    CROSS JOIN LATERAL (SELECT product_shown_price(p.source_id, p.price, po.fixed_price, po.price_adjust,
                                                  COALESCE(co.markup_percent, p_markup)) AS price) sp
   WHERE p.id = p_product_id;
  v_found := FOUND;
  v_fulfilment := CASE
    WHEN NOT v_found THEN 'none'
    WHEN v_prod.source_id IS NOT NULL THEN CASE WHEN v_prod.type = 'service' THEN 'none' ELSE 'source' END
    WHEN v_prod.type = 'code' THEN 'codes'
    WHEN v_prod.type = 'file' AND v_prod.has_files THEN 'files'
    ELSE 'none' END;
  v_total := CASE WHEN v_found THEN v_prod.price * p_quantity END;
  IF (NOT v_found OR NOT v_prod.visible OR v_fulfilment = 'none'
      OR p_quantity < v_prod.min_qty OR p_quantity > v_prod.max_qty OR v_total >= 10000000000000000::numeric)
     AND p_request_id IS NOT NULL THEN
    RETURN QUERY SELECT * FROM orders o WHERE o.user_id = p_user_id AND o.request_id = p_request_id AND o.test = true;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;
  IF NOT v_found OR NOT v_prod.visible OR v_fulfilment = 'none' THEN
    RAISE EXCEPTION 'product_unavailable' USING ERRCODE = 'RG001';
  END IF;
  IF p_quantity < v_prod.min_qty OR p_quantity > v_prod.max_qty THEN
    RAISE EXCEPTION 'quantity_out_of_range' USING ERRCODE = 'RG001', DETAIL = format('allowed %s-%s', v_prod.min_qty, v_prod.max_qty);
  END IF;
  IF v_total >= 10000000000000000::numeric THEN
    RAISE EXCEPTION 'insufficient_balance' USING ERRCODE = 'RG001';
  END IF;

  INSERT INTO orders (order_code, user_id, request_id, product_id, product_name, product_type, quantity, unit_price, total, status, message, test)
  VALUES (p_order_code, p_user_id, p_request_id, p_product_id, v_prod.name, v_prod.type, p_quantity, v_prod.price, v_total,
          CASE WHEN v_fulfilment = 'source' THEN 'pending' ELSE 'success' END,
          CASE v_fulfilment WHEN 'codes' THEN p_codes_message WHEN 'files' THEN p_files_message ELSE p_source_message END,
          true)
  ON CONFLICT (user_id, request_id, test) DO NOTHING
  RETURNING * INTO v_order;
  IF NOT FOUND THEN
    RETURN QUERY SELECT * FROM orders o WHERE o.user_id = p_user_id AND o.request_id = p_request_id AND o.test = true;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'request_id taken but no order found' USING ERRCODE = 'RG002';
    END IF;
    RETURN;
  END IF;

  PERFORM pg_advisory_xact_lock(1919249506, p_user_id);
  UPDATE users u SET test_balance = u.test_balance - v_total
   WHERE u.id = p_user_id AND u.test_balance >= v_total
  RETURNING u.test_balance INTO v_balance;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'insufficient_balance' USING ERRCODE = 'RG001';
  END IF;
  INSERT INTO balance_ledger (user_id, amount, balance_after, kind, ref, actor, test)
  VALUES (p_user_id, -v_total, v_balance, 'order', v_order.order_code, 'user:' || p_user_id, true);
  RETURN NEXT v_order;
END;
$$;
