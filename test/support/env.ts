import { randomBytes } from 'node:crypto';
import { ADMIN_TOKEN, INGEST_TOKEN, REDIS_URL } from './test-env';

/** Environment every e2e test file starts from; an app that needs other values gets them from createTestApp({ env }). */
process.env.APP_ENV = 'production';
process.env.REDIS_URL = REDIS_URL;
process.env.ADMIN_TOKEN = ADMIN_TOKEN;
process.env.INGEST_TOKEN = INGEST_TOKEN;
// One key per run (global-setup): the files share the run's database and its sealed secrets.
process.env.SECRETS_KEY = process.env.TEST_SECRETS_KEY ?? randomBytes(32).toString('hex');
process.env.LOG_LEVEL = process.env.TEST_LOG_LEVEL ?? 'silent';
process.env.PUBLIC_BASE_URL = 'http://127.0.0.1:3000';
// Limits out of the way of the suite (one key may run 30 calls at once in a race test, and every
// request comes from 127.0.0.1); the tests of the limits set their own (test/mcp-limits, test/public-rate-limits,
// test/oauth-authorize-rate-limit, test/oauth-endpoint-rate-limits, test/web/web-hardening).
process.env.MCP_KEY_CONCURRENCY = '1000';
process.env.MCP_RATE_LIMIT = '1000000';
process.env.PIXEL_RATE_LIMIT = '1000000';
process.env.ATTACHMENT_RATE_LIMIT = '1000000';
process.env.WEBHOOK_KEYS_RATE_LIMIT = '1000000';
process.env.OAUTH_AUTHORIZE_RATE_LIMIT = '1000000';
process.env.OAUTH_TOKEN_RATE_LIMIT = '1000000';
process.env.OAUTH_REGISTER_RATE_LIMIT = '1000000';
process.env.WEB_ACTION_RATE_LIMIT = '1000000';
// Every tool result is checked against its outputSchema: a result that drifts fails the test that made it.
process.env.MCP_CHECK_RESULTS = 'true';
