-- Trigger of payment_requests (AFTER UPDATE OF status): a status change made without `app.actor` came from someone's
-- SQL session and gets an audit_log row with actor `sql` (docs/operations.md, "Audit trail").
CREATE OR REPLACE FUNCTION payment_requests_audit_sql() RETURNS trigger AS $$
BEGIN
  IF nullif(current_setting('app.actor', true), '') IS NOT NULL THEN
    RETURN NULL;
  END IF;
  INSERT INTO audit_log (actor, action, target, request_id, summary)
  VALUES (
    'sql', 'payment.status', 'payment:' || NEW.payment_id, NULL,
    jsonb_build_object('from', OLD.status, 'to', NEW.status, 'db_user', current_user::text, 'application_name', current_setting('application_name', true))
  );
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
