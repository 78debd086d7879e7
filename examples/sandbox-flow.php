<?php
// sandbox-flow.php: a test payment request approved by the sandbox (docs/sandbox-payments.md), PHP with php-curl.
// Run: PAY_TEST_KEY=pk_test_... PAY_TEST_SECRET=psk_test_... php sandbox-flow.php
function post(string $path, string $event, array $body, array $headers = []): array {
    $raw = json_encode($body);
    $signature = hash_hmac('sha256', $event . "\n" . $raw, getenv('PAY_TEST_SECRET'));
    $ch = curl_init((getenv('PAY_BASE_URL') ?: 'http://127.0.0.1:3000') . $path);
    curl_setopt_array($ch, [CURLOPT_POST => true, CURLOPT_POSTFIELDS => $raw, CURLOPT_RETURNTRANSFER => true,
        CURLOPT_HTTPHEADER => array_merge(['Content-Type: application/json', 'X-API-Key: ' . getenv('PAY_TEST_KEY'),
            "X-API-Event: $event", "X-API-Signature: $signature", 'X-API-Signature-Alg: HMAC-SHA256'], $headers)]);
    return json_decode(curl_exec($ch), true);
}
$invoice = 'TEST-' . bin2hex(random_bytes(8));
$created = post('/api/v1/payment-requests', 'payment.request.create',
    ['merchant_invoice_id' => $invoice, 'amount' => 150000], ["Idempotency-Key: $invoice"]);
echo $created['payment']['transfer_content'], "\n";
$settled = post("/api/v1/sandbox/payment-requests/{$created['payment_id']}/simulate",
    'payment.request.simulate', ['outcome' => 'approved']);
echo $settled['status'], "\n";
