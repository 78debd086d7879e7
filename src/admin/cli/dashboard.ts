import { cmd, type Command, get } from './kit.js';

/** The `dashboard` command: the figures of the console's dashboard (docs/console.md). */
export const dashboardCommands: readonly Command[] = [
  cmd({
    noun: 'dashboard',
    verb: 'show',
    usage: '',
    summary: "today's orders, revenue and payments, balances, outbox, sync, and the last 24 hours by hour",
    call: () => get('/admin/v1/dashboard'),
  }),
];
