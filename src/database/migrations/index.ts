import { Accounts1763800000000 } from './1763800000000-Accounts';
import { Webhooks1763800100000 } from './1763800100000-Webhooks';

/** Migrations in the order they run. */
export const MIGRATIONS = [Accounts1763800000000, Webhooks1763800100000];
