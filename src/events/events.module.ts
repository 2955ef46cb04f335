import { Global, Module } from '@nestjs/common';
import { EventBus } from './event-bus';
import { OutboxRepository } from './outbox.repository';
import { OutboxRelay } from './outbox-relay';

/** The durable event bus: publish in a transaction, relayed to subscribers after commit. */
@Global()
@Module({
  providers: [OutboxRepository, EventBus, OutboxRelay],
  exports: [EventBus, OutboxRelay],
})
export class EventsModule {}
