import { defineSlice, integer } from '../config/settings';

/** The audit trail's retention (docs/configuration.md). */
export const auditConfig = defineSlice({
  audit: {
    /** Audit rows older than this many days are deleted; 0 keeps them forever. */
    retentionDays: integer('AUDIT_RETENTION_DAYS', { min: 0, max: 3650, default: 365 }),
  },
});
