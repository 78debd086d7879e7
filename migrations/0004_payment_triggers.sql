-- Payment lifecycle rules live in the database, so that an admin's SQL UPDATE obeys them too (DESIGN 5 and 6):
-- illegal transitions are refused, every change is recorded with its actor, and an approval writes its
-- payment.approved outbox row in the same transaction as the change.
CREATE OR REPLACE FUNCTION payment_requests_check_transition() RETURNS trigger AS $$
BEGIN
  IF NEW.status IS NOT DISTINCT FROM OLD.status THEN
    RETURN NEW;
  END IF;
  IF OLD.status IN ('approved', 'rejected', 'expired', 'cancelled') THEN
    RAISE EXCEPTION 'payment % is % (final); it cannot become %', OLD.payment_id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  IF NOT (
       (OLD.status = 'preparing_payment' AND NEW.status IN ('pending_payment', 'cancelled'))
    OR (OLD.status = 'pending_payment' AND NEW.status IN ('payment_reported', 'approved', 'rejected', 'expired', 'cancelled'))
    OR (OLD.status = 'payment_reported' AND NEW.status IN ('approved', 'rejected', 'expired', 'cancelled'))
  ) THEN
    RAISE EXCEPTION 'payment % cannot go from % to %', OLD.payment_id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  NEW.updated_at := now();
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER payment_requests_check_transition
  BEFORE UPDATE OF status ON payment_requests
  FOR EACH ROW EXECUTE FUNCTION payment_requests_check_transition();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION payment_requests_record_transition() RETURNS trigger AS $$
DECLARE
  actor text := coalesce(nullif(current_setting('app.actor', true), ''), 'sql:' || current_user);
  evt text;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
    RETURN NULL;
  END IF;
  INSERT INTO payment_transitions (payment_request_id, from_status, to_status, actor)
  VALUES (NEW.id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END, NEW.status, actor);
  IF NEW.status = 'approved' THEN
    evt := 'evt_' || substr(md5(random()::text || clock_timestamp()::text || NEW.payment_id), 1, 12)
                  || substr(replace(gen_random_uuid()::text, '-', ''), 1, 12);
    -- Serialised once, here: the webhook sends these exact bytes and signs them.
    INSERT INTO webhook_outbox (event_id, client_id, event, payment_request_id, body)
    VALUES (
      evt, NEW.client_id, 'payment.approved', NEW.id,
      '{"event_id":' || to_json(evt)::text
        || ',"event":"payment.approved"'
        || ',"created_at":' || to_json(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text
        || ',"payment_id":' || to_json(NEW.payment_id)::text
        || ',"merchant_invoice_id":' || to_json(NEW.merchant_invoice_id)::text
        || ',"amount":' || trim_scale(NEW.amount)::text
        || ',"transfer_content":' || coalesce(to_json(NEW.transfer_content)::text, 'null')
        || ',"status":"approved"}'
    );
  END IF;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER payment_requests_record_transition
  AFTER INSERT OR UPDATE OF status ON payment_requests
  FOR EACH ROW EXECUTE FUNCTION payment_requests_record_transition();
