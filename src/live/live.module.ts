import { Global, Module } from '@nestjs/common';
import { LivePublisher } from './live-publisher';
import { LiveStreams } from './live-streams';
import { LiveRepository } from './live.repository';

/**
 * Live updates of the web app's pages (docs/web.md, "Live updates"): committed events go from the
 * relay (LivePublisher, where the relay runs) over Redis to every API process (LiveStreams), which
 * tells each open stream what its person may see now. Global, so the web app's stream route finds
 * LiveStreams (and a worker, which serves no page, still publishes).
 */
@Global()
@Module({
  providers: [LiveRepository, LiveStreams, LivePublisher],
  exports: [LiveStreams],
})
export class LiveModule {}
