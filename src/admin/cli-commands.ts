/** The CLI's commands, one file per noun under cli/ (the names are contract: docs/contract.md, "Admin"); cli.ts runs them. */
import type { Command } from './cli/kit.js';
import { userCommands } from './cli/user.js';
import { categoryCommands } from './cli/category.js';
import { productCommands } from './cli/product.js';
import { codesCommands } from './cli/codes.js';
import { orderCommands } from './cli/order.js';
import { overrideCommands } from './cli/override.js';
import { syncCommands } from './cli/sync.js';
import { guardCommands } from './cli/guard.js';
import { settingCommands } from './cli/setting.js';
import { demoCommands } from './cli/demo.js';
import { payMethodCommands } from './cli/pay-method.js';
import { payClientCommands } from './cli/pay-client.js';
import { payPaymentCommands } from './cli/pay-payment.js';
import { payWebhookCommands } from './cli/pay-webhook.js';
import { payTransactionCommands } from './cli/pay-transaction.js';
import { auditCommands } from './cli/audit.js';
import { backupCommands } from './cli/backup.js';
import { dashboardCommands } from './cli/dashboard.js';

export { CliError, usageError, type Command, type HttpCall, type OptionSpec, type Opts } from './cli/kit.js';

/** Every command, in help order. */
export const COMMANDS: readonly Command[] = [
  ...userCommands,
  ...categoryCommands,
  ...productCommands,
  ...codesCommands,
  ...orderCommands,
  ...overrideCommands,
  ...syncCommands,
  ...guardCommands,
  ...settingCommands,
  ...demoCommands,
  ...payMethodCommands,
  ...payClientCommands,
  ...payPaymentCommands,
  ...payWebhookCommands,
  ...payTransactionCommands,
  ...auditCommands,
  ...dashboardCommands,
  ...backupCommands,
];
