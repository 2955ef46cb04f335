import { defineSlice, integer } from '../config/settings';

/** The OAuth authorization server of the MCP endpoint (docs/mcp.md). */
export const oauthConfig = defineSlice({
  oauth: {
    /** A client registration (RFC 7591) that got no grant this long after registering is deleted. */
    unusedClientTtlSeconds: integer('OAUTH_UNUSED_CLIENT_TTL_SECONDS', { min: 1, max: 2_592_000, default: 86_400 }),
  },
});
