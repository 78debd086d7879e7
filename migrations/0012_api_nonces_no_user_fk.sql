-- Signed requests burned their nonce with a foreign key check on users: a key-share lock on the reseller's row, the
-- row every order of that reseller updates. A nonce is a short-lived replay cache; users are never deleted by the app.
ALTER TABLE "api_nonces" DROP CONSTRAINT "api_nonces_user_id_users_id_fk";
