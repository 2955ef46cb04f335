import { Global, Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { GrantCallers } from '../identity/grant-callers';
import { OutboundHttpModule } from '../outbound-http/outbound-http.module';
import { ClientMetadataDocuments } from './client-metadata-documents';
import { OAuthClientsRetention } from './oauth-clients-retention';
import { OAuthRepository } from './oauth.repository';
import { OAuthService } from './oauth.service';

/**
 * The service as the OAuth authorization server of its MCP endpoint. Global so that the AuthGuard
 * and ApiKeysService (auth/) find GrantCallers, as they find the web app's PageAuthenticator.
 */
@Global()
@Module({
  imports: [AuthModule, AccountsModule, OutboundHttpModule],
  providers: [OAuthRepository, ClientMetadataDocuments, OAuthService, OAuthClientsRetention, { provide: GrantCallers, useExisting: OAuthService }],
  exports: [OAuthService, GrantCallers],
})
export class OAuthModule {}
