import { Global, Module } from '@nestjs/common';
import { AccountsModule } from '../../accounts/accounts.module';
import { PageAuthenticator } from '../../identity/page-authenticator';
import { SignInMailer } from './sign-in-mailer';
import { SignInRequests } from './sign-in-requests.service';
import { WebAuthenticator } from './web-authenticator';
import { WebSessionsRepository } from './web-sessions.repository';
import { WebSessionsRetention } from './web-sessions-retention';
import { WebSessionsService } from './web-sessions.service';

/**
 * Sign-in links and web sessions. Global so that the AuthGuard (auth/) finds the PageAuthenticator
 * without importing the web app, and the admin API finds the sessions service.
 */
@Global()
@Module({
  imports: [AccountsModule],
  providers: [
    WebSessionsRepository,
    WebSessionsService,
    WebSessionsRetention,
    SignInMailer,
    SignInRequests,
    WebAuthenticator,
    { provide: PageAuthenticator, useExisting: WebAuthenticator },
  ],
  exports: [WebSessionsService, SignInRequests, PageAuthenticator],
})
export class WebSessionsModule {}
