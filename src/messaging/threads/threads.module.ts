import { Module } from '@nestjs/common';
import { MessagingCoreModule } from '../messaging-core.module';
import { ThreadsRepository } from './threads.repository';
import { ThreadsService } from './threads.service';
import { THREAD_TOOLS } from './threads.tools';

/** Reading threads (list_threads, get_thread) and labelling them (label_thread). */
@Module({
  imports: [MessagingCoreModule],
  providers: [ThreadsRepository, ThreadsService, ...THREAD_TOOLS],
})
export class ThreadsModule {}
