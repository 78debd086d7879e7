<?php
// pay-example.php: the payment API from PHP 7.4 or later with the curl extension (hash_hmac + curl).
// Run: PAY_API_KEY=... PAY_API_SECRET=... php pay-example.php

$baseUrl = getenv('PAY_BASE_URL') ?: 'http://127.0.0.1:3000';
$apiKey = getenv('PAY_API_KEY');
$apiSecret = getenv('PAY_API_SECRET');
if (!$apiKey || !$apiSecret) {
    fwrite(STDERR, "Set PAY_API_KEY and PAY_API_SECRET\n");
    exit(1);
}

/** Lowercase hex HMAC-SHA256 of EVENT + "\n" + RAW_BODY, keyed with the API secret. */
function pay_sign(string $apiSecret, string $event, string $rawBody): string
{
    return hash_hmac('sha256', $event . "\n" . $rawBody, $apiSecret);
}

/** One signed call; $body is the JSON text itself, signed and sent as the same string. Returns [HTTP status, decoded body, headers]. */
function pay_call(string $method, string $path, string $event, string $body = '', ?string $idempotencyKey = null): array
{
    global $baseUrl, $apiKey, $apiSecret;
    $headers = [
        'X-API-Key: ' . $apiKey,
        'X-API-Event: ' . $event,
        'X-API-Signature: ' . pay_sign($apiSecret, $event, $method === 'GET' ? '' : $body),
        'X-API-Signature-Alg: HMAC-SHA256',
    ];
    $ch = curl_init($baseUrl . $path);
    $responseHeaders = [];
    curl_setopt_array($ch, [
        CURLOPT_RETURNTRANSFER => true,
        CURLOPT_TIMEOUT => 30,
        CURLOPT_HEADERFUNCTION => function ($ch, $line) use (&$responseHeaders) {
            $parts = explode(':', $line, 2);
            if (count($parts) === 2) {
                $responseHeaders[strtolower(trim($parts[0]))] = trim($parts[1]);
            }
            return strlen($line);
        },
    ]);
    if ($method !== 'GET') {
        // Always JSON, an empty body included: without it curl would send a form content type.
        $headers[] = 'Content-Type: application/json';
        if ($idempotencyKey !== null) {
            $headers[] = 'Idempotency-Key: ' . $idempotencyKey;
        }
        curl_setopt($ch, CURLOPT_CUSTOMREQUEST, $method);
        curl_setopt($ch, CURLOPT_POSTFIELDS, $body);
    }
    curl_setopt($ch, CURLOPT_HTTPHEADER, $headers);
    $raw = curl_exec($ch);
    if ($raw === false) {
        throw new RuntimeException('Payment API unreachable: ' . curl_error($ch));
    }
    $status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
    curl_close($ch);
    return [$status, json_decode($raw, true), $responseHeaders];
}

[$status, $ping] = pay_call('GET', '/api/v1/ping', 'system.ping');
echo "ping: $status ", json_encode($ping), "\n";
[$status, $methods] = pay_call('GET', '/api/v1/payment-methods', 'payment.methods.list');
echo "methods: $status ", json_encode($methods), "\n";

// Serialise once, and store the body and the key with the invoice: a retry must send both again, unchanged.
$invoice = 'INV-' . time();
$body = json_encode(['merchant_invoice_id' => $invoice, 'amount' => 150000, 'description' => "Top-up $invoice"], JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
$idempotencyKey = bin2hex(random_bytes(16));
[$status, $created] = pay_call('POST', '/api/v1/payment-requests', 'payment.request.create', $body, $idempotencyKey);
if ($status !== 201) {
    throw new RuntimeException("Creation failed: HTTP $status " . json_encode($created));
}
echo "created: $status {$created['payment_id']} {$created['status']} payment_ready=", var_export($created['payment_ready'], true), "\n";

// A retry (after a timeout, say) with the same key and body answers the same payment.
[$status, $retry, $headers] = pay_call('POST', '/api/v1/payment-requests', 'payment.request.create', $body, $idempotencyKey);
echo "retry: $status Idempotent-Replayed=", $headers['idempotent-replayed'] ?? '-', ' same payment=', var_export($retry['payment_id'] === $created['payment_id'], true), "\n";

// Poll while payment_ready is false and the request is still being prepared.
$p = $created;
for ($attempt = 0; !$p['payment_ready'] && $attempt < 30; $attempt++) {
    if (($p['status'] ?? '') !== 'preparing_payment') {
        throw new RuntimeException("Payment {$created['payment_id']}: HTTP $status " . json_encode($p));
    }
    sleep(2);
    [$status, $p] = pay_call('GET', '/api/v1/payment-requests/' . rawurlencode($created['payment_id']), 'payment.request.status');
}
if (!$p['payment_ready']) {
    throw new RuntimeException("Payment {$created['payment_id']}: payment data not ready");
}
echo "status: {$p['status']} transfer {$p['payment']['amount']} to {$p['payment']['account_number']} ({$p['payment']['bank_name']}) with note {$p['payment']['transfer_content']}, until {$p['payment']['expires_at']}\n";

// Cancel: the customer gave up. A POST with an empty body signs EVENT + "\n".
[$status, $cancelled] = pay_call('POST', '/api/v1/payment-requests/' . rawurlencode($created['payment_id']) . '/cancel', 'payment.request.cancel');
echo "cancel: $status {$cancelled['status']}\n";

// The same Idempotency-Key with another body is refused (IDEMPOTENCY_KEY_REUSED): a key belongs to one creation.
$other = json_encode(['merchant_invoice_id' => $invoice, 'amount' => 200000], JSON_UNESCAPED_SLASHES);
[$status, $error] = pay_call('POST', '/api/v1/payment-requests', 'payment.request.create', $other, $idempotencyKey);
echo "same key, other body: $status ", json_encode($error), "\n";
