-- Trigger of payment_requests (AFTER INSERT OR UPDATE OF status): every status change is recorded with its actor, and
-- a final status writes its outbox row (body serialised once, here) in the same transaction as the change; the NOTIFY
-- reaches the servers only on commit (docs/tables.md, "The payment triggers"). A sandbox request's row and body say
-- "test": its sender signs with the test webhook secret (docs/sandbox-payments.md).
CREATE OR REPLACE FUNCTION payment_requests_record_transition() RETURNS trigger AS $$
DECLARE
  actor text := coalesce(nullif(current_setting('app.actor', true), ''), 'sql:' || current_user);
  evt text;
  evt_name text;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
    RETURN NULL;
  END IF;
  INSERT INTO payment_transitions (payment_request_id, from_status, to_status, actor)
  VALUES (NEW.id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END, NEW.status, actor);
  IF NEW.status NOT IN ('approved', 'expired', 'cancelled', 'rejected') THEN
    RETURN NULL;
  END IF;
  evt_name := 'payment.' || NEW.status;
  IF NEW.status <> 'approved' AND NOT EXISTS (
    SELECT 1 FROM pay_clients c WHERE c.id = NEW.client_id AND evt_name = ANY (c.events)
  ) THEN
    RETURN NULL;
  END IF;
  evt := 'evt_' || substr(md5(random()::text || clock_timestamp()::text || NEW.payment_id), 1, 12)
                || substr(replace(gen_random_uuid()::text, '-', ''), 1, 12);
  -- Serialised once, here: the webhook sends these exact bytes and signs them.
  INSERT INTO webhook_outbox (event_id, client_id, event, payment_request_id, test, body)
  VALUES (
    evt, NEW.client_id, evt_name, NEW.id, NEW.test,
    '{"event_id":' || to_json(evt)::text
      || ',"event":' || to_json(evt_name)::text
      || ',"created_at":' || to_json(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text
      || ',"payment_id":' || to_json(NEW.payment_id)::text
      || ',"merchant_invoice_id":' || to_json(NEW.merchant_invoice_id)::text
      || ',"amount":' || trim_scale(NEW.amount)::text
      || ',"transfer_content":' || coalesce(to_json(NEW.transfer_content)::text, 'null')
      || ',"status":' || to_json(NEW.status)::text
      || CASE WHEN NEW.test THEN ',"test":true' ELSE '' END || '}'
  );
  PERFORM pg_notify('rg_events', '{"origin":"db","topic":"webhooks"}');
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
