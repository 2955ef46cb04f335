import { secret } from '../config/dev-secrets';
import { BEARER_TOKEN } from '../config/parsers';
import { defineSlice } from '../config/settings';

/** The operator's bearer tokens: the admin API's and the providers' on /ingest routes. */
export const authConfig = defineSlice({
  adminToken: secret('ADMIN_TOKEN', 'adminToken', BEARER_TOKEN),
  /** Providers (carriers, mail servers, mailbox sync) authenticate with this on /ingest routes. */
  ingestToken: secret('INGEST_TOKEN', 'ingestToken', BEARER_TOKEN),
});
