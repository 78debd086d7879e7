-- Each order rule once (docs/decisions.md, "One order function"): the catalogue rules as inlinable SQL functions that
-- src/catalog/queries.ts calls, and one order function for local and source products that applies them, in place of
-- order_create_local and the source-order transaction in TypeScript. Each function's text is copied byte for byte from
-- its file in src/db/functions/ (the current text of every SQL function lives there).
-- The price the public sees (docs/decisions.md, "A shown price that does not fit"): a local product's own price; a
-- source product's price x (1 + markup/100) rounded up to the whole currency unit, then + the override's adjustment,
-- never below 0, or the override's fixed price instead of all of it. numeric throughout: no float touches money. A
-- result numeric(18,2) cannot hold (a huge source price, a markup raised after the sync) is NULL, never an overflow
-- error: product_visible_at then hides the product. The limit is MONEY_LIMIT of src/shared/money.ts. A source
-- product's price is NULL too when the markup is NULL or negative: price_markup_percent is 0 or more
-- (src/settings/registry.ts), and NULL arithmetic would otherwise end in GREATEST(0, NULL), a price of 0.
-- LANGUAGE sql, IMMUTABLE, one expression and no FROM: the planner inlines it into the catalogue queries
-- (src/catalog/queries.ts) and the order function, so it costs what the expression costs.
CREATE OR REPLACE FUNCTION product_shown_price(
  p_source_id text,
  p_price numeric,
  p_fixed_price numeric,
  p_price_adjust numeric,
  p_markup numeric
) RETURNS numeric
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE
    WHEN (p_source_id IS NULL OR p_markup >= 0)
     AND (CASE WHEN p_source_id IS NULL THEN p_price
          ELSE GREATEST(0, COALESCE(p_fixed_price, CEIL(p_price * (100 + p_markup) / 100) + COALESCE(p_price_adjust, 0))) END)
         < 10000000000000000::numeric
    THEN (CASE WHEN p_source_id IS NULL THEN p_price
          ELSE GREATEST(0, COALESCE(p_fixed_price, CEIL(p_price * (100 + p_markup) / 100) + COALESCE(p_price_adjust, 0))) END)::numeric(18, 2)
  END
$$;
--> statement-breakpoint
-- What makes a product invisible to the public: hidden locally or by its override, gone upstream, or in a category
-- gone upstream or hidden by its override. The override flags are NULL when no override row exists (left joins).
-- Inlined by the planner (LANGUAGE sql, IMMUTABLE, one expression): its AND terms still filter each table on its own.
CREATE OR REPLACE FUNCTION product_visible(
  p_hidden boolean,
  p_missing boolean,
  p_override_hidden boolean,
  p_category_missing boolean,
  p_category_override_hidden boolean
) RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT NOT p_hidden AND NOT p_missing AND NOT COALESCE(p_override_hidden, false)
     AND NOT p_category_missing AND NOT COALESCE(p_category_override_hidden, false)
$$;
--> statement-breakpoint
-- Visible, and its price at the current markup can be shown (p_shown_price: product_shown_price): what the public
-- lists, reads and orders. Inlined by the planner like the two functions it joins.
CREATE OR REPLACE FUNCTION product_visible_at(
  p_hidden boolean,
  p_missing boolean,
  p_override_hidden boolean,
  p_category_missing boolean,
  p_category_override_hidden boolean,
  p_shown_price numeric
) RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT product_visible(p_hidden, p_missing, p_override_hidden, p_category_missing, p_category_override_hidden)
     AND p_shown_price IS NOT NULL
$$;
--> statement-breakpoint
-- Order creation in one statement, for every product (docs/decisions.md, "One order function"). Its rules are the
-- catalogue's own: product_visible_at and product_shown_price at the markup the caller read from the settings. A
-- local code or file product is claimed and ends `success`; a source product (not of type service) ends `pending`
-- with p_source_message, and the caller forwards it to the source site after the commit (src/sync/upstream.ts).
-- A refusal raises SQLSTATE RG001 with its reason as message (one of SQL_REFUSALS, src/ordering/refusals.ts) and a
-- detail: the statement rolls back whole. A NULL or negative markup is no refusal but the caller's bug
-- (price_markup_percent is 0 or more, src/settings/registry.ts): it raises RG002 before anything is read or written.
-- Order of writes: the order row first (a racing duplicate request_id waits on its unique index and replays), then
-- the codes (SKIP LOCKED), and the balance last, so that the user's row is locked only until the commit that follows
-- at once. The claim is pinned to the partial index codes_available_idx: with one product holding most codes, the
-- planner's estimate made walking the primary key in id order look as cheap, and every order then crossed all the
-- codes sold before it. Ordering by (product_id, id) under a range condition is an order only that index provides
-- (test/orders/claim-plan.test.ts).
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
AS $$
DECLARE
  v_prod record;
  v_fulfilment text;
  v_total numeric;
  v_order orders;
  v_balance numeric(18, 2);
  v_claimed integer;
BEGIN
  IF p_markup IS NULL OR p_markup < 0 THEN
    RAISE EXCEPTION 'order_create: markup must be 0 or more, not %', COALESCE(p_markup::text, 'NULL') USING ERRCODE = 'RG002';
  END IF;
  IF p_request_id IS NOT NULL THEN
    RETURN QUERY SELECT * FROM orders o WHERE o.user_id = p_user_id AND o.request_id = p_request_id;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;

  SELECT COALESCE(po.name, p.name) AS name, p.type, sp.price, p.min_qty, p.max_qty, p.source_id,
         product_visible_at(p.hidden, p.missing, po.hidden, c.missing, co.hidden, sp.price) AS visible,
         EXISTS (SELECT 1 FROM product_files f WHERE f.product_id = p.id) AS has_files
    INTO v_prod
    FROM products p
    JOIN categories c ON c.id = p.category_id
    LEFT JOIN source_overrides po ON po.source_id = p.source_id
    LEFT JOIN source_category_overrides co ON co.source_id = c.source_id
    CROSS JOIN LATERAL (SELECT product_shown_price(p.source_id, p.price, po.fixed_price, po.price_adjust, p_markup) AS price) sp
   WHERE p.id = p_product_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'product_unavailable' USING ERRCODE = 'RG001';
  END IF;
  -- A local file product sells its attached files: with none attached yet there is nothing to deliver. A service
  -- product is fulfilled by hand, never through the API (src/catalog/queries.ts, fulfilmentOf).
  v_fulfilment := CASE
    WHEN v_prod.source_id IS NOT NULL THEN CASE WHEN v_prod.type = 'service' THEN 'none' ELSE 'source' END
    WHEN v_prod.type = 'code' THEN 'codes'
    WHEN v_prod.type = 'file' AND v_prod.has_files THEN 'files'
    ELSE 'none' END;
  IF NOT v_prod.visible OR v_fulfilment = 'none' THEN
    RAISE EXCEPTION 'product_unavailable' USING ERRCODE = 'RG001';
  END IF;
  IF p_quantity < v_prod.min_qty OR p_quantity > v_prod.max_qty THEN
    RAISE EXCEPTION 'quantity_out_of_range' USING ERRCODE = 'RG001', DETAIL = format('allowed %s-%s', v_prod.min_qty, v_prod.max_qty);
  END IF;
  -- Unbounded numeric: a total numeric(18,2) cannot hold is more than any balance, not a database error.
  v_total := v_prod.price * p_quantity;
  IF v_total >= 10000000000000000::numeric THEN
    RAISE EXCEPTION 'insufficient_balance' USING ERRCODE = 'RG001';
  END IF;

  INSERT INTO orders (order_code, user_id, request_id, product_id, product_name, product_type, quantity, unit_price, total, status, message)
  VALUES (p_order_code, p_user_id, p_request_id, p_product_id, v_prod.name, v_prod.type, p_quantity, v_prod.price, v_total,
          CASE WHEN v_fulfilment = 'source' THEN 'pending' ELSE 'success' END,
          CASE v_fulfilment WHEN 'codes' THEN p_codes_message WHEN 'files' THEN p_files_message ELSE p_source_message END)
  ON CONFLICT (user_id, request_id) DO NOTHING
  RETURNING * INTO v_order;
  IF NOT FOUND THEN
    -- The racing request with this request_id committed first (read committed: this statement sees it).
    RETURN QUERY SELECT * FROM orders o WHERE o.user_id = p_user_id AND o.request_id = p_request_id;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'request_id taken but no order found' USING ERRCODE = 'RG002';
    END IF;
    RETURN;
  END IF;

  IF v_fulfilment = 'codes' THEN
    -- The range on product_id (not "=") keeps product_id in the sort key, so only codes_available_idx can give this
    -- order: the planner cannot choose the primary key walk, which crosses every sold code first (see the header).
    UPDATE codes SET status = 'sold', order_id = v_order.id
     WHERE id IN (SELECT k.id FROM codes k
                   WHERE k.product_id >= p_product_id AND k.product_id <= p_product_id AND k.status = 'available'
                   ORDER BY k.product_id, k.id LIMIT p_quantity FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_claimed = ROW_COUNT;
    IF v_claimed < p_quantity THEN
      -- Same answer as when the balance was debited before the claim: a short balance is named first.
      IF NOT EXISTS (SELECT 1 FROM users u WHERE u.id = p_user_id AND u.balance >= v_total) THEN
        RAISE EXCEPTION 'insufficient_balance' USING ERRCODE = 'RG001';
      END IF;
      RAISE EXCEPTION 'out_of_stock' USING ERRCODE = 'RG001';
    END IF;
  END IF;

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
DROP FUNCTION order_create_local(integer, text, integer, integer, text, text, text);
