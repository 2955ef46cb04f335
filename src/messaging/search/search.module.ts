import { Module } from '@nestjs/common';
import { MessagingCoreModule } from '../messaging-core.module';
import { SearchRepository } from './search.repository';
import { SearchService } from './search.service';
import { SearchMessagesTool } from './search.tools';

/** Full-text search of messages and attachment text (search_messages). */
@Module({
  imports: [MessagingCoreModule],
  providers: [SearchRepository, SearchService, SearchMessagesTool],
})
export class SearchModule {}
