import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { EventFeedController } from './event-feed.controller';
import { EventFeedRepository } from './event-feed.repository';
import { EventFeedService } from './event-feed.service';
import { EventStreams } from './event-streams';
import { FeedWakes } from './feed-wakes';

/**
 * Events for callers without a URL (docs/mcp.md, "Events"; docs/events-feed.md): the committed
 * event log read from a cursor, scoped as webhook fan-out is. The MCP endpoint's events/* methods
 * and the HTTP feed (GET /api/events) both call EventFeedService.
 */
@Module({
  imports: [AuthModule],
  controllers: [EventFeedController],
  providers: [EventFeedRepository, EventFeedService, FeedWakes, EventStreams],
  exports: [EventFeedService, EventStreams],
})
export class EventFeedModule {}
