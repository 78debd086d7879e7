-- The audit trail of payment state changes made by SQL (docs/operations.md, "Audit trail"). Every change the
-- application makes sets the transaction-local `app.actor` first (src/payments/lifecycle.ts asActor, the bank feeds);
-- a status UPDATE without it came from someone's SQL session and gets an audit row with actor `sql`. The application's
-- own admin actions are recorded by the application, in the same transaction, so they never get a second row here.
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
--> statement-breakpoint
CREATE TRIGGER payment_requests_audit_sql
  AFTER UPDATE OF status ON payment_requests
  FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
  EXECUTE FUNCTION payment_requests_audit_sql();
