/**
 * The limit of scenarios 3 and 8: a bare Nest app (same framework, same Express adapter, same pg
 * pool size) doing the same database read as a tool, with no authentication, no JSON-RPC/MCP
 * protocol work, no validation and no logging. Started by the scenarios. Its pool uses the
 * service's PreparingClient, so both sides run the read as a prepared statement.
 *
 *   GET /webhooks?userId=<uuid>            the user's endpoints with their channels (list_webhooks)
 *   GET /webhooks/<id>?userId=<uuid>       one endpoint of the user (get_webhook)
 *   GET /threads?userId=<uuid>             list_threads' first page for the user: the service's own
 *                                          statement (ThreadsRepository.page) and rows as the tool lists
 *                                          them, answered as the tool's result carries them (the
 *                                          structured page and its JSON text), so the answer is as large
 */
import 'reflect-metadata';
import { Controller, Get, Inject, Module, NotFoundException, Param, Query } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { Principal as Caller } from '../src/identity/principal';
import { threadListItem } from '../src/conversations/threads/threads.service';
import { ThreadsRepository } from '../src/conversations/threads/threads.repository';
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

/** list_threads' page size, plus one to know whether there is a next page (ThreadsService.list). */
const THREADS_PAGE = 25;

@Controller('threads')
class BareThreadsController {
  private readonly threads: ThreadsRepository;
  /** The user's caller, read once: the limit has no per-call authentication. */
  private readonly callers = new Map<string, Promise<Caller>>();

  constructor(@Inject(DATA_SOURCE) private readonly db: DataSource) {
    this.threads = new ThreadsRepository(db);
  }

  @Get()
  async list(@Query('userId') userId: string) {
    const rows = await this.threads.page(await this.callerOf(userId), { limit: THREADS_PAGE + 1 });
    const page = { threads: rows.slice(0, THREADS_PAGE).map(threadListItem), nextCursor: rows.length > THREADS_PAGE ? 'next' : null };
    return { structuredContent: page, content: [{ type: 'text', text: JSON.stringify(page) }] };
  }

  private callerOf(userId: string): Promise<Caller> {
    let caller = this.callers.get(userId);
    if (!caller) {
      caller = (async () => {
        const [user]: Array<{ org_id: string; role: Caller['role'] }> = await this.db.query(`SELECT org_id, role FROM users WHERE id = $1`, [userId]);
        const lines: Caller['lines'] = await this.db.query(
          `SELECT l.id, l.type, l.address FROM line_memberships m JOIN lines l ON l.id = m.line_id WHERE m.user_id = $1 AND l.deleted_at IS NULL ORDER BY l.id`,
          [userId],
        );
        return {
          keyId: null,
          userId,
          orgId: user.org_id,
          orgTier: 'PRO',
          role: user.role,
          channelAccess: 'ALL',
          lines,
          permissions: ['read'],
        } as unknown as Caller;
      })();
      this.callers.set(userId, caller);
    }
    return caller;
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
  controllers: [BareController, BareThreadsController, HealthController],
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
