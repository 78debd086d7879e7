-- Example queries for admins of a PostgreSQL deployment (docs/tables.md, "Example queries"); run them with psql.
-- They only read. Change data through the admin CLI: docs/tables.md, "Warnings", says what SQL skips.

-- Users, catalogue and orders
-- one user's balance, state and allowlist
SELECT id, name, balance, api_enabled, allowed_ips, api_key_hint
FROM users WHERE name = 'demo';

-- the last 20 balance movements of that user, newest first (test ones, of the sandbox, left out)
SELECT l.id, l.amount, l.balance_after, l.kind, l.ref, l.note, l.actor, l.created_at
FROM balance_ledger l JOIN users u ON u.id = l.user_id
WHERE u.name = 'demo' AND NOT l.test
ORDER BY l.id DESC LIMIT 20;

-- every user's balance next to the sum of their live ledger: the two must be equal
SELECT u.id, u.name, u.balance, COALESCE(sum(l.amount), 0) AS ledger_sum
FROM users u LEFT JOIN balance_ledger l ON l.user_id = u.id AND NOT l.test
GROUP BY u.id ORDER BY u.id;

-- products with their category and code stock
SELECT p.id, p.name, c.name AS category, p.type, p.price, p.hidden,
       count(k.id) FILTER (WHERE k.status = 'available') AS available,
       count(k.id) FILTER (WHERE k.status = 'sold')      AS sold
FROM products p
JOIN categories c ON c.id = p.category_id
LEFT JOIN codes k ON k.product_id = p.id
GROUP BY p.id, c.name
ORDER BY p.id;

-- code products that are out of stock and still visible
SELECT p.id, p.name
FROM products p
WHERE p.type = 'code' AND NOT p.hidden
  AND NOT EXISTS (SELECT 1 FROM codes k WHERE k.product_id = p.id AND k.status = 'available');

-- the orders of the last day with their owner, newest first
SELECT o.order_code, u.name AS user_name, o.request_id, o.status, o.product_type, o.quantity, o.total,
       o.delivered_at IS NOT NULL AS codes_shown, o.created_at
FROM orders o JOIN users u ON u.id = o.user_id
WHERE o.created_at > now() - interval '1 day' AND NOT o.test
ORDER BY o.id DESC LIMIT 20;

-- the codes of one order with their usage (the codes themselves are encrypted: `order show CODE` shows them)
SELECT k.id, k.status, k.used, k.used_at
FROM codes k JOIN orders o ON o.id = k.order_id
WHERE o.order_code = 'ODPMJALBW0W129L2'
ORDER BY k.id;

-- sales per product (successful live orders)
SELECT product_id, product_name, count(*) AS orders, sum(quantity) AS units, sum(total) AS revenue
FROM orders WHERE status = 'success' AND NOT test
GROUP BY product_id, product_name ORDER BY revenue DESC;

-- files of file products
SELECT f.product_id, p.name, f.filename, f.size_bytes, f.sha256, f.storage_name
FROM product_files f JOIN products p ON p.id = f.product_id
ORDER BY f.product_id, f.id;

-- nonces of signed requests stored now, per user
SELECT user_id, count(*) AS nonces, min(expires_at) AS first_expiry
FROM api_nonces GROUP BY user_id;

-- settings that differ from their defaults (secret ones show as enc:v1:...; `setting get K` shows them)
SELECT key, value, updated_at FROM settings ORDER BY key;

-- the products the public sees at a markup of 10 % (or their category's markup_percent), with their prices
SELECT p.id, coalesce(o.name, p.name) AS name,
       product_shown_price(p.source_id, p.price, o.fixed_price, o.price_adjust, coalesce(co.markup_percent, 10)) AS shown_price
  FROM products p
  JOIN categories c ON c.id = p.category_id
  LEFT JOIN source_overrides o ON o.source_id = p.source_id
  LEFT JOIN source_category_overrides co ON co.source_id = c.source_id
 WHERE product_visible_at(p.hidden, p.missing, o.hidden, c.missing, co.hidden,
                          p.source_id, p.source_stock, p.source_status, true,
                          product_shown_price(p.source_id, p.price, o.fixed_price, o.price_adjust,
                                              coalesce(co.markup_percent, 10)));

-- Payments
-- API clients (the credentials stay encrypted)
SELECT id, name, domain, webhook_url, status, allowed_ips, events, prev_secret_expires_at, approved_at
FROM pay_clients ORDER BY id;

-- payment methods
SELECT code, name, bank_bin, bank_name, account_number, account_name, active, is_default
FROM payment_methods ORDER BY id;

-- open payment requests, oldest first
SELECT p.payment_id, c.name AS client, p.merchant_invoice_id, p.amount, p.status, p.transfer_content, p.expires_at
FROM payment_requests p JOIN pay_clients c ON c.id = p.client_id
WHERE p.status IN ('preparing_payment', 'pending_payment', 'payment_reported')
ORDER BY p.id;

-- the request that a transfer note on the bank statement belongs to, however its look-alikes were typed
SELECT payment_id, merchant_invoice_id, amount, status, expires_at
FROM payment_requests
WHERE transfer_key = translate(upper(regexp_replace('RG0KF5TVIFQ6', '[^A-Za-z0-9]', '', 'g')), 'OILZ', '0112');

-- approvals per client and day
SELECT c.name AS client, date_trunc('day', t.at) AS day, count(*) AS approved, sum(p.amount) AS amount
FROM payment_transitions t
JOIN payment_requests p ON p.id = t.payment_request_id
JOIN pay_clients c ON c.id = p.client_id
WHERE t.to_status = 'approved'
GROUP BY c.name, date_trunc('day', t.at) ORDER BY day DESC, client;

-- recent Idempotency-Key records
SELECT client_id, key, state, payment_id, created_at, expires_at
FROM payment_idempotency ORDER BY created_at DESC LIMIT 20;

-- the webhook outbox
SELECT event_id, client_id, event, status, attempts, next_attempt_at, last_error, delivered_at, created_at
FROM webhook_outbox ORDER BY id DESC LIMIT 20;

-- the cron jobs
SELECT name, locked_until, last_started_at, last_finished_at FROM job_leases ORDER BY name;
