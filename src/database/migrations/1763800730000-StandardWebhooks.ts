import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Standard Webhooks signing (docs/webhooks.md, "Standard Webhooks"): each endpoint chooses its
 * `webhook-signature` version (`v1` HMAC with its secret, the default, or `v1a` ed25519), may
 * switch the legacy `X-Service-Signature` off, and a `v1a` endpoint holds an ed25519 key pair: the
 * private key sealed like the secrets, the public key (`whpk_`) in the clear, and for 24 hours
 * after a rotation the previous pair, expiring with the previous secret. Existing endpoints stay
 * `v1` with the legacy header on.
 */
export class StandardWebhooks1763800730000 implements MigrationInterface {
  name = 'StandardWebhooks1763800730000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE webhook_endpoints
        ADD COLUMN signature_version text NOT NULL DEFAULT 'v1',
        ADD COLUMN legacy_signature boolean NOT NULL DEFAULT true,
        ADD COLUMN signing_key_sealed text,
        ADD COLUMN public_key text,
        ADD COLUMN previous_signing_key_sealed text,
        ADD COLUMN previous_public_key text,
        ADD CONSTRAINT webhook_endpoints_signature_version_check CHECK (signature_version IN ('v1', 'v1a')),
        ADD CONSTRAINT webhook_endpoints_signing_key_check
          CHECK ((signing_key_sealed IS NULL) = (public_key IS NULL) AND (signing_key_sealed IS NOT NULL) = (signature_version = 'v1a')),
        ADD CONSTRAINT webhook_endpoints_previous_signing_key_check
          CHECK ((previous_signing_key_sealed IS NULL) = (previous_public_key IS NULL)
                 AND (previous_signing_key_sealed IS NULL OR previous_secret_expires_at IS NOT NULL))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE webhook_endpoints
        DROP COLUMN signature_version, DROP COLUMN legacy_signature, DROP COLUMN signing_key_sealed,
        DROP COLUMN public_key, DROP COLUMN previous_signing_key_sealed, DROP COLUMN previous_public_key`);
  }
}
