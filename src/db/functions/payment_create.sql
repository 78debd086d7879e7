-- Payment creation in one statement (docs/PERFORMANCE.md, "Payment creation in one call"): the key record (done,
-- naming the payment), the request, and its preparation commit together or not at all, each transition recorded by
-- the trigger under its own actor (the client's for the insert, system:prepare for the preparation). The caller
-- builds the prepared fields (bank data, transfer_content, VietQR payload and PNG) before it calls, from the method it
-- resolved, perhaps from its cache: the method must still be active (and the default, when the caller asked for the
-- default) with the very bank data the caller built from, and stays so until the commit (FOR SHARE); else nothing is
-- written and the caller resolves the method again.
-- Answers: the prepared request (or the unprepared one when p_prepared is false); no row when the key already names
-- an unexpired record (the caller reads it and replays). Refusals raise SQLSTATE RG003 with the reason as message:
-- in_progress (another creation with this key holds its try-lock), method_changed, invoice_pending (DETAIL: the open
-- request's payment_id). A transfer_content drawn twice raises the unique violation 23505: the caller draws again.
-- The try-lock takes (client id, hash of the key) in the key space of order_create's lock of its user.
-- p_test: a sandbox request (docs/sandbox-payments.md). Its key records, its open invoices and its lock are its own
-- world's; its bank data is the sandbox account, so only the method's code (active, default) is checked.
CREATE OR REPLACE FUNCTION payment_create(
  p_client_id integer,
  p_key text,
  p_hash text,
  p_now timestamptz,
  p_key_expires_at timestamptz,
  p_payment_id text,
  p_invoice text,
  p_amount numeric,
  p_currency text,
  p_description text,
  p_method_code text,
  p_method_default boolean,
  p_bank_bin text,
  p_bank_code text,
  p_bank_name text,
  p_account_number text,
  p_account_name text,
  p_prepared boolean,
  p_transfer_content text,
  p_qr_content text,
  p_qr_image text,
  p_expires_at timestamptz,
  p_checkout_token_hash text,
  p_checkout_token text,
  p_return_url text,
  p_test boolean
) RETURNS SETOF payment_requests AS $$
DECLARE
  rec_expires_at timestamptz;
  req payment_requests;
  open_id text;
BEGIN
  IF NOT pg_try_advisory_xact_lock(p_client_id, hashtext(CASE WHEN p_test THEN 'test:' || p_key ELSE p_key END)) THEN
    RAISE EXCEPTION 'in_progress' USING ERRCODE = 'RG003';
  END IF;
  -- A retry answers from its key first, before the method is checked.
  SELECT i.expires_at INTO rec_expires_at FROM payment_idempotency i WHERE i.client_id = p_client_id AND i.test = p_test AND i.key = p_key;
  IF FOUND THEN
    IF rec_expires_at > p_now THEN
      RETURN;
    END IF;
    DELETE FROM payment_idempotency i WHERE i.client_id = p_client_id AND i.test = p_test AND i.key = p_key AND i.expires_at <= p_now;
  END IF;
  PERFORM 1 FROM payment_methods m
  WHERE m.code = p_method_code AND m.active AND (m.is_default OR NOT p_method_default)
    AND (p_test OR (m.bank_bin = p_bank_bin AND m.bank_code = p_bank_code AND m.bank_name = p_bank_name
    AND m.account_number = p_account_number AND m.account_name = p_account_name))
  FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'method_changed' USING ERRCODE = 'RG003';
  END IF;
  INSERT INTO payment_idempotency (client_id, test, key, request_hash, payment_id, state, created_at, expires_at)
  VALUES (p_client_id, p_test, p_key, p_hash, p_payment_id, 'done', p_now, p_key_expires_at)
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM set_config('app.actor', 'client:' || p_client_id, true);
  INSERT INTO payment_requests AS r (payment_id, client_id, merchant_invoice_id, amount, currency, description, method_code, status,
    checkout_token_hash, checkout_token, return_url, test)
  VALUES (p_payment_id, p_client_id, p_invoice, p_amount, p_currency, p_description, p_method_code, 'preparing_payment',
    p_checkout_token_hash, p_checkout_token, p_return_url, p_test)
  ON CONFLICT (client_id, test, merchant_invoice_id) WHERE status IN ('preparing_payment', 'pending_payment', 'payment_reported') DO NOTHING
  RETURNING * INTO req;
  IF req.id IS NULL THEN
    SELECT r.payment_id INTO open_id FROM payment_requests r
    WHERE r.client_id = p_client_id AND r.test = p_test AND r.merchant_invoice_id = p_invoice
      AND r.status IN ('preparing_payment', 'pending_payment', 'payment_reported');
    RAISE EXCEPTION 'invoice_pending' USING ERRCODE = 'RG003', DETAIL = coalesce(open_id, '');
  END IF;
  IF NOT p_prepared THEN
    RETURN NEXT req;
    RETURN;
  END IF;
  PERFORM set_config('app.actor', 'system:prepare', true);
  RETURN QUERY
  UPDATE payment_requests r
  SET status = 'pending_payment', bank_bin = p_bank_bin, bank_code = p_bank_code, bank_name = p_bank_name,
      account_number = p_account_number, account_name = p_account_name, transfer_content = p_transfer_content,
      qr_content = p_qr_content, qr_image = p_qr_image, expires_at = p_expires_at
  WHERE r.id = req.id
  RETURNING r.*;
END;
$$ LANGUAGE plpgsql;
