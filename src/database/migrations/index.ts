import { Accounts1763800000000 } from './1763800000000-Accounts';

/** Migrations in the order they run. */
export const MIGRATIONS = [Accounts1763800000000];
