#!/usr/bin/env bash
# pay-example.sh: the payment API from a shell, with curl and openssl only.
# Run: PAY_API_KEY=... PAY_API_SECRET=... bash pay-example.sh
set -euo pipefail

BASE_URL="${PAY_BASE_URL:-http://127.0.0.1:3000}"
API_KEY="${PAY_API_KEY:?set PAY_API_KEY}"
API_SECRET="${PAY_API_SECRET:?set PAY_API_SECRET}"

# sign EVENT RAW_BODY: lowercase hex HMAC-SHA256 of EVENT + LF + RAW_BODY, keyed with the API secret.
sign() {
  printf '%s\n%s' "$1" "$2" | openssl dgst -sha256 -hmac "$API_SECRET" | sed 's/^.*= //'
}

# pay_get PATH EVENT [curl options]: a GET has an empty raw body, so it signs EVENT + LF.
pay_get() {
  local path=$1 event=$2
  shift 2
  curl -sS "$BASE_URL$path" \
    -H "X-API-Key: $API_KEY" \
    -H "X-API-Event: $event" \
    -H "X-API-Signature: $(sign "$event" '')" \
    -H "X-API-Signature-Alg: HMAC-SHA256" \
    "$@"
}

# pay_post PATH EVENT RAW_BODY [curl options]: sends exactly the bytes it signed.
pay_post() {
  local path=$1 event=$2 body=$3
  shift 3
  curl -sS -X POST "$BASE_URL$path" \
    -H "X-API-Key: $API_KEY" \
    -H "X-API-Event: $event" \
    -H "X-API-Signature: $(sign "$event" "$body")" \
    -H "X-API-Signature-Alg: HMAC-SHA256" \
    -H "Content-Type: application/json" \
    "$@" --data-raw "$body"
}

echo '--- ping'
pay_get /api/v1/ping system.ping
echo
echo '--- payment methods'
pay_get /api/v1/payment-methods payment.methods.list
echo

echo '--- create'
INVOICE="INV-$(date +%s)"
BODY="{\"merchant_invoice_id\":\"$INVOICE\",\"amount\":150000,\"description\":\"Top-up $INVOICE\"}"
# Store the key and the body with the invoice: a retry sends both again, unchanged.
IDEMPOTENCY_KEY="$(openssl rand -hex 16)"
CREATED="$(pay_post /api/v1/payment-requests payment.request.create "$BODY" -H "Idempotency-Key: $IDEMPOTENCY_KEY")"
echo "$CREATED"
PAYMENT_ID="$(printf '%s' "$CREATED" | sed -n 's/.*"payment_id":"\([^"]*\)".*/\1/p')"
[ -n "$PAYMENT_ID" ] || { echo "creation failed" >&2; exit 1; }

echo '--- retry with the same key and body: the same payment'
pay_post /api/v1/payment-requests payment.request.create "$BODY" -H "Idempotency-Key: $IDEMPOTENCY_KEY" \
  -o /dev/null -D - | grep -iE '^(HTTP/|idempotent-replayed)'

echo '--- status, polled while payment_ready is false'
for attempt in $(seq 1 30); do
  STATUS="$(pay_get "/api/v1/payment-requests/$PAYMENT_ID" payment.request.status)"
  case "$STATUS" in
    *'"payment_ready":true'*) break ;;
    *'"status":"preparing_payment"'*) sleep 2 ;;
    *) echo "$STATUS" >&2; exit 1 ;;  # an error, or a request that ended without being paid
  esac
done
case "$STATUS" in *'"payment_ready":true'*) ;; *) echo "payment data not ready" >&2; exit 1 ;; esac
echo "$STATUS"

echo '--- cancel'
pay_post "/api/v1/payment-requests/$PAYMENT_ID/cancel" payment.request.cancel ''
echo
