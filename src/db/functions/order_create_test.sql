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
