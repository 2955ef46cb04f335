import { Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { CachingHostResolver } from './caching-host-resolver';
import { DnsHostResolver, HOST_RESOLVER, HostResolver, URL_POLICY_OPTIONS, UrlPolicy, UrlPolicyOptions } from './url-policy';

/**
 * The outbound HTTP policy, one for every request the service makes on a URL someone else gave
 * it: webhook and event-feed deliveries, the SMS carrier's API, mail servers, OAuth client
 * metadata documents. It provides the address rule (`UrlPolicy`) and the host resolver it and
 * the mail-server check share; `pinnedLookup` (a plain function) connects to the address the
 * check returned. Names are looked up with getaddrinfo and their answers remembered for
 * `OUTBOUND_DNS_CACHE_SECONDS` (CachingHostResolver). The operator allowlist is still read from
 * `WEBHOOK_ALLOWED_CIDRS` (the `webhooks` configuration slice), so no setting changed name when
 * the policy left webhooks.
 */
@Module({
  providers: [
    {
      provide: HOST_RESOLVER,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): HostResolver => new CachingHostResolver(new DnsHostResolver(), config.outboundHttp.dnsCacheSeconds * 1000),
    },
    {
      provide: URL_POLICY_OPTIONS,
      inject: [APP_CONFIG, HOST_RESOLVER],
      useFactory: (config: AppConfig, resolver: HostResolver): UrlPolicyOptions => ({
        allowHttp: config.isDevelopment,
        allowedCidrs: config.webhooks.allowedCidrs,
        resolver,
      }),
    },
    UrlPolicy,
  ],
  exports: [UrlPolicy, HOST_RESOLVER],
})
export class OutboundHttpModule {}
