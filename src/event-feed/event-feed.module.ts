import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { EventCatalogModule } from '../event-catalog/event-catalog.module';
import { DeliveryModule } from '../delivery/delivery.module';
import { OutboundHttpModule } from '../outbound-http/outbound-http.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { EventSubscriptionsRepository } from './event-subscriptions.repository';
import { EventSubscriptionsService } from './event-subscriptions.service';
import { EventFeedController } from './event-feed.controller';
import { EventFeedRepository } from './event-feed.repository';
import { EventFeedService } from './event-feed.service';
import { EventStreams } from './event-streams';
import { FeedWakes } from './feed-wakes';

/**
 * Events for callers without a URL (docs/mcp.md, "Events"; docs/events-feed.md): the committed
 * event log read from a cursor, scoped as webhook fan-out is. The MCP endpoint's events/* methods
 * and the HTTP feed (GET /api/events) both call EventFeedService; events/subscribe and
 * events/unsubscribe (webhook mode) call EventSubscriptionsService, which delivers through the
 * delivery engine; events/stream (push mode) runs in EventStreams.
 */
@Module({
  imports: [AuthModule, EventCatalogModule, OutboundHttpModule, WebhooksModule, DeliveryModule],
  controllers: [EventFeedController],
  providers: [EventFeedRepository, EventFeedService, FeedWakes, EventSubscriptionsRepository, EventSubscriptionsService, EventStreams],
  exports: [EventFeedService, EventSubscriptionsService, EventStreams],
})
export class EventFeedModule {}
