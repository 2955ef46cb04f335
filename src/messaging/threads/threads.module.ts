import { Module } from '@nestjs/common';
import { MessagingCoreModule } from '../messaging-core.module';
import { LABEL_TOOLS } from './labels.tools';
import { ThreadsRepository } from './threads.repository';
import { ThreadsService } from './threads.service';
import { THREAD_TOOLS } from './threads.tools';

/** Reading threads (list_threads, get_thread, get_message), labelling them (label_thread) and listing the labels (list_labels). */
@Module({
  imports: [MessagingCoreModule],
  providers: [ThreadsRepository, ThreadsService, ...THREAD_TOOLS, ...LABEL_TOOLS],
})
export class ThreadsModule {}
