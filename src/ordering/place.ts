import type { Readable } from 'node:stream';
import type { OrderEventName } from '../webhooks/order-events.js';
import { SourceOrderFailed } from './errors.js';
import type { OrderInput, OrderRow, OrderService } from './service.js';
import type { Owner } from './delivery.js';

/**
 * The create request around its own forward: `lost()` once its client went away (the answer cannot reach it), and
 * `settled(event)` hears of a change that forward committed without its callback (docs/webhooks.md, "Order callbacks").
 */
export type CreateAnswer = { lost(): boolean; settled(event: OrderEventName): void };

/**
 * What the ordering API asks of the intermediary about an order of a source product. sync/upstream.ts implements it
 * and deps.ts wires it in, so ordering/ never imports sync/ (docs/decisions.md, "Folders without import cycles").
 */
export interface SourceOrders {
  /** One attempt to settle a pending order with the source; `first`: the attempt of the create request itself. */
  forward(order: OrderRow, first?: boolean, answer?: CreateAnswer): Promise<OrderRow>;
  /** Writes the callback of a change the create's own forward did not announce. */
  announceLate(orderId: number, event: OrderEventName): Promise<void>;
  /** The source's ZIP of a file order; refuses with SourceDownloadFailed (ordering/errors.ts). */
  download(order: OrderRow): Promise<Readable>;
}

/** The create request's connection, as far as the order verb needs it (the route builds it from its reply). */
export interface ClientLink {
  /** Aborts when the client leaves before its answer is written: an order still waiting for its lane is not started. */
  readonly signal: AbortSignal;
  /** Whether the connection has closed (the client left, or the answer was written and the socket let go). */
  closed(): boolean;
  /** Whether the whole answer was handed to the socket. */
  answered(): boolean;
  /** Runs `fn` when the connection closes. */
  onClose(fn: () => void): void;
}

type Log = { error(obj: object, msg: string): void };

/** Order creation for the ordering API: the order service's create, then the first forward of a source order. */
export function createOrderPlacement(deps: { orders: OrderService; source: SourceOrders }) {
  /**
   * A change the first forward commits without its callback (its client is still there, so its answer tells it) is
   * announced later unless that answer is written in full: the client left, or the route failed after the commit
   * (docs/webhooks.md, "Order callbacks").
   */
  async function forwardFirst(order: OrderRow, link: ClientLink, log: Log): Promise<OrderRow> {
    let unannounced: OrderEventName | undefined;
    let told = false;
    let forwarded = false;
    let checked = false;
    const check = () => {
      if (!forwarded || !link.closed() || checked) return;
      checked = true;
      if (unannounced && !(told && link.answered()))
        deps.source.announceLate(order.id, unannounced).catch((err: unknown) => log.error({ err }, 'late order callback not written'));
    };
    link.onClose(check);
    let settled: OrderRow;
    try {
      settled = await deps.source.forward(order, true, { lost: () => link.closed(), settled: (e) => (unannounced = e) });
    } finally {
      forwarded = true;
      check();
    }
    // The answer the route writes next (the order, or its order_failed) tells what the forward did.
    told = true;
    return settled;
  }

  /**
   * Takes the order exactly once per request_id; a new order of a source product is then asked of the source (same
   * request_id on every retry). A source's refusal is SourceOrderFailed: the order is failed and refunded by then.
   */
  async function place(owner: Owner, input: OrderInput, link: ClientLink, log: Log): Promise<{ order: OrderRow; replay: boolean }> {
    const created = await deps.orders.create(owner.id, input, { signal: link.signal, mode: owner.mode });
    // A test order is never forwarded: it waits, pending, for the sandbox settle endpoint (docs/sandbox-ordering.md).
    if (created.replay || created.order.status !== 'pending' || created.order.test) return created;
    const order = await forwardFirst(created.order, link, log);
    if (order.status === 'failed') throw new SourceOrderFailed(`${order.message}. Order ${order.orderCode}`);
    return { order, replay: false };
  }

  return { place };
}

export type OrderPlacement = ReturnType<typeof createOrderPlacement>;
