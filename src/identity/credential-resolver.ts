import { Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { MicroBatcher, rowsPerKey } from '../common/micro-batcher';
import { CredentialRow } from './credential-rows.sql';
import { LastUseStamps } from './last-use-stamps';
import { KeyPrincipal } from './principal';

/**
 * Resolves a credential (an API key, or an OAuth access token) to its principal, one way for both:
 * lookups of concurrent requests share one query (each still reads the credential after its
 * request arrived, so a revoked key or grant is refused at once), and a use is stamped on the row
 * off the request's path, at most once a minute (LastUseStamps).
 */
export class CredentialResolver<R extends CredentialRow> {
  private readonly lookups: MicroBatcher<string, R[]>;
  private readonly lastUse: LastUseStamps;

  constructor(options: {
    /** The rows of the credentials with these hashes (credentialRowsSql). */
    rows: (hashes: string[]) => Promise<R[]>;
    /** The hash a row was found by. */
    hashOf: (row: R) => string;
    /** Stamps the credential `id`'s last use with `now` (stampLastUseSql). */
    stamp: (id: string, now: Date) => Promise<unknown>;
    clock: Clock;
    logger: Logger;
    /** Names the credential in a warning: "API key", "OAuth grant". */
    what: string;
  }) {
    this.lookups = new MicroBatcher<string, R[]>(async (hashes) => rowsPerKey(hashes, await options.rows([...new Set(hashes)]), options.hashOf));
    this.lastUse = new LastUseStamps(options.stamp, options.clock, options.logger, options.what);
  }

  /** The rows of the credential with this hash; none when it is unknown (or no longer works). */
  rows(hash: string): Promise<R[]> {
    return this.lookups.submit(hash);
  }

  /** The principal of a credential's rows (at least one), its use noted. */
  principal(rows: R[]): KeyPrincipal {
    this.lastUse.note(rows[0].key_id, rows[0].last_used_at);
    return principalOfRows(rows);
  }

  /** Lets last-use writes in flight finish (before the database pool closes). */
  settle(): Promise<void> {
    return this.lastUse.settle();
  }
}

/** The principal of a key's or grant's rows: one per line it reaches, the first holding the credential, its person and org. */
export function principalOfRows(rows: CredentialRow[]): KeyPrincipal {
  const first = rows[0];
  return {
    keyId: first.key_id,
    userId: first.user_id,
    orgId: first.org_id,
    orgTier: first.tier,
    role: first.role,
    channelAccess: first.mode,
    permissions: first.permissions,
    lines: rows.filter((r) => r.line_id !== null).map((r) => ({ id: r.line_id!, type: r.line_type!, address: r.line_address! })),
  };
}
