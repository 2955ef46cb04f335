import { defineSlice, integer } from '../config/settings';

/** Requests the service makes on URLs someone else gave it. */
export const outboundHttpConfig = defineSlice({
  outboundHttp: {
    /** How long a host name's addresses are remembered (CachingHostResolver); 0: every request looks the name up. */
    dnsCacheSeconds: integer('OUTBOUND_DNS_CACHE_SECONDS', { min: 0, max: 3600, default: 30 }),
  },
});
