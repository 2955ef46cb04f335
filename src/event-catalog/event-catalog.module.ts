import { Module } from '@nestjs/common';
import { EventCatalogController } from './event-catalog.controller';
import { EventCatalog } from './event-catalog.service';

/** The event catalog: the JSON Schemas of every event kind and mode and the AsyncAPI document, served and exported. */
@Module({
  controllers: [EventCatalogController],
  providers: [EventCatalog],
  exports: [EventCatalog],
})
export class EventCatalogModule {}
