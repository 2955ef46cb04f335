import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AuthModule } from '../auth/auth.module';
import { EventFeedModule } from '../event-feed/event-feed.module';
import { McpAdmissionMiddleware } from './mcp-admission.middleware';
import { MCP_PATH, McpController } from './mcp.controller';
import { McpService } from './mcp.service';
import { McpSubscriptions } from './mcp-subscriptions';
import { ToolRegistry } from './tool-registry';

/** The JSON-RPC / MCP protocol only. Tools live in their feature modules and are discovered. */
@Module({
  imports: [DiscoveryModule, AuthModule, EventFeedModule],
  controllers: [McpController],
  providers: [ToolRegistry, McpService, McpSubscriptions],
})
export class McpModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(McpAdmissionMiddleware).forRoutes({ path: MCP_PATH, method: RequestMethod.POST });
  }
}
