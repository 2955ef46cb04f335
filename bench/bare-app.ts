/**
 * The limit of scenario 3: a bare Nest app (same framework, same Express adapter, same pg pool
 * size) doing the same database read as list_webhooks / get_webhook, with no authentication, no
 * JSON-RPC/MCP protocol work, no validation and no logging. Started by bench/run.ts. Its pool
 * uses the service's PreparingClient, so both sides run the read as a prepared statement.
 *
 *   GET /webhooks?userId=<uuid>            the user's endpoints with their channels
 *   GET /webhooks/<id>?userId=<uuid>       one endpoint of the user
 */
import 'reflect-metadata';
import { Controller, Get, Inject, Module, NotFoundException, Param, Query } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { PreparingClient } from '../src/database/preparing-client';

const DATA_SOURCE = Symbol('DATA_SOURCE');

// The columns the tool returns (its entity's default selection) and the eager channels join.
const ENDPOINT_READ = `
  SELECT e.id, e.url, e.events, e.mode, e.message_history_count, e.status, e.all_channels, e.disabled_reason,
         e.created_at, e.updated_at, c.line_id AS channel_id, c.channel_type
    FROM webhook_endpoints e
    LEFT JOIN webhook_endpoint_channels c ON c.endpoint_id = e.id
   WHERE e.user_id = $1`;

interface Row {
  id: string;
  url: string;
  events: string[];
  mode: string;
  message_history_count: number;
  status: string;
  all_channels: boolean;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
  channel_id: string | null;
  channel_type: string | null;
}

function toViews(rows: Row[]) {
  const byId = new Map<string, { view: Record<string, unknown>; channels: Array<{ channelType: string; channelId: string }> }>();
  for (const r of rows) {
    let entry = byId.get(r.id);
    if (!entry) {
      entry = {
        channels: [],
        view: {
          id: r.id,
          url: r.url,
          events: r.events,
          mode: r.mode,
          messageHistoryCount: r.message_history_count,
          status: r.status,
          disabledReason: r.disabled_reason,
          createdAt: new Date(r.created_at).toISOString(),
          updatedAt: new Date(r.updated_at).toISOString(),
        },
      };
      byId.set(r.id, entry);
    }
    if (r.channel_id && r.channel_type) entry.channels.push({ channelType: r.channel_type, channelId: r.channel_id });
  }
  return [...byId.values()].map(({ view, channels }) => ({
    ...view,
    channelScope: { allChannels: rows.find((r) => r.id === view.id)!.all_channels, channels },
  }));
}

@Controller('webhooks')
class BareController {
  constructor(@Inject(DATA_SOURCE) private readonly db: DataSource) {}

  @Get()
  async list(@Query('userId') userId: string) {
    const rows: Row[] = await this.db.query(`${ENDPOINT_READ} ORDER BY e.created_at, e.id`, [userId]);
    return { endpoints: toViews(rows) };
  }

  @Get(':id')
  async get(@Param('id') id: string, @Query('userId') userId: string) {
    const rows: Row[] = await this.db.query(`${ENDPOINT_READ} AND e.id = $2`, [userId, id]);
    if (rows.length === 0) throw new NotFoundException();
    return { endpoint: toViews(rows)[0] };
  }
}

@Controller('health')
class HealthController {
  @Get()
  ok() {
    return { ok: true };
  }
}

@Module({
  controllers: [BareController, HealthController],
  providers: [
    {
      provide: DATA_SOURCE,
      useFactory: async () =>
        new DataSource({
          type: 'postgres',
          url: process.env.DATABASE_URL,
          extra: { max: 20, connectionTimeoutMillis: 5000, Client: PreparingClient },
        }).initialize(),
    },
  ],
})
class BareModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(BareModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
  process.send?.({ ready: true });
}

process.on('disconnect', () => process.exit(0));
main().catch((error: unknown) => {
  process.stderr.write(`bare app failed: ${(error as Error).stack}\n`);
  process.exit(1);
});
