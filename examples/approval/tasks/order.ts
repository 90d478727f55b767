// An order that charges a card, waits up to 3 days for a person's approval, then ships. Charge and
// ship are steps: a crash, a deploy or a retry never charges twice, and the wait holds no worker.
// (The card and the carrier are stand-ins; put your own calls inside the steps.)
import { UnrecoverableError, type TaskContext } from '../../../worker/index.ts';

interface Order {
  orderId: string;
  cents: number;
  /** A stand-in for a card the bank refuses. */
  declined?: boolean;
}

const THREE_DAYS_MS = 3 * 24 * 3_600_000;

export default async function order(p: Order, ctx: TaskContext) {
  const charge = await ctx.step('charge', () => {
    if (p.declined) return { ok: false as const, reason: 'card declined' };
    ctx.log.info({ order: p.orderId, cents: p.cents }, 'charging the card');
    return { ok: true as const, receipt: `rcpt-${p.orderId}` };
  });
  // A declined card is not tried again: the job fails at once, whatever attempts it has left.
  if (!charge.ok) throw new UnrecoverableError(charge.reason);

  // POST /api/jobs/:id/signals/approve with {"payload": {"approved": true}}, or the board's Approve.
  const decision = await ctx.waitFor<{ approved: boolean; by?: string }>('approve', { timeoutMs: THREE_DAYS_MS });
  if (!decision?.approved) {
    await ctx.step('refund', () => ({ refunded: charge.receipt }));
    return { order: p.orderId, shipped: false, reason: decision ? 'rejected' : 'no answer in 3 days' };
  }
  const shipment = await ctx.step('ship', () => ({ tracking: `trk-${p.orderId}` }));
  return { order: p.orderId, shipped: true, receipt: charge.receipt, ...shipment, approvedBy: decision.by ?? null };
}
