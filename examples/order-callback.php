<?php
// POST /callbacks: order callbacks of a reseller backend (docs/webhooks.md). Returns [HTTP status, answer body].
// Needs a table callback_events (event_id PRIMARY KEY); adapt the UPDATE to your own orders table.
function handle_order_callback(PDO $pdo, string $secret, string $rawBody, array $server, ?int $now = null): array
{
    $timestamp = $server['HTTP_X_WEBHOOK_TIMESTAMP'] ?? '';
    $signature = strtolower($server['HTTP_X_WEBHOOK_SIGNATURE'] ?? '');
    if (!preg_match('/^\d{1,12}$/', $timestamp) || abs(($now ?? time()) - (int) $timestamp) > 300) {
        return [401, 'stale or missing timestamp'];
    }
    if (!hash_equals(hash_hmac('sha256', $timestamp . '.' . $rawBody, $secret), $signature)) {
        return [401, 'bad signature'];
    }
    $event = json_decode($rawBody, true);
    if (!is_array($event) || ($event['event_id'] ?? '') !== ($server['HTTP_X_WEBHOOK_ID'] ?? '')
        || !in_array($event['event'] ?? '', ['order.completed', 'order.failed', 'order.refunded'], true)) {
        return [400, 'bad body'];
    }
    // event_id is a unique key: a repeat changes nothing, but is still answered 200.
    $ins = $pdo->prepare('INSERT INTO callback_events (event_id) VALUES (?) ON CONFLICT (event_id) DO NOTHING');
    $ins->execute([$event['event_id']]);
    if ($ins->rowCount() === 1) {
        $pdo->prepare('UPDATE my_orders SET status = ? WHERE order_code = ?')->execute([$event['status'], $event['order_code']]);
    }
    return [200, 'ok'];
}
