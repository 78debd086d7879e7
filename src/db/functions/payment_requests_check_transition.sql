-- Trigger of payment_requests (BEFORE UPDATE OF status): the payment lifecycle lives in the database, so that an
-- admin's SQL UPDATE obeys it too; an illegal change of status is refused (docs/tables.md, "The payment triggers").
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
