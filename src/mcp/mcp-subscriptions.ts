import { BeforeApplicationShutdown, Inject, Injectable, Logger, ServiceUnavailableException } from '@nestjs/common';
import { Request } from 'express';
import { AuthGuard } from '../auth/auth.guard';
import { isGrantId, KeyPrincipal } from '../identity/principal';
import { CredentialChanges } from '../auth/credential-changes';
import { RateLimitedError } from '../common/errors';
import { EventStreamSink } from '../common/event-stream';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { failure, JsonRpcId, UNAUTHORIZED } from './json-rpc';
import { HonoredFilter } from './listen-filter';
import { META } from './protocol-eras';
import { ToolRegistry } from './tool-registry';

/** What a listen stream is opened with: the caller as the request resolved it, and its bearer credential, to check again. */
export interface ListenRequest {
  id: JsonRpcId;
  honored: HonoredFilter;
  caller: KeyPrincipal;
  /** The bearer token and the request it came on (a token's resource is the request's URL). Kept in memory for the stream's life only. */
  credential: { token: string; request: Request };
  serverInfo: object;
}

interface Subscription extends ListenRequest {
  sink: EventStreamSink;
  /** What decides the caller's tool list and what its tools reach, as last sent (fingerprintOf). */
  fingerprint: string;
  /** The acknowledgement was sent: frames may be written. */
  started: boolean;
  closed: boolean;
}

/** A client this far behind (bytes its connection has not taken) is cut off, as a live page's stream is. */
const MAX_BUFFERED_BYTES = 64 * 1024;
const KEEPALIVE_FRAME = ': keepalive\n\n';

/**
 * The `subscriptions/listen` streams of revision 2026-07-28 that this API process holds open
 * (docs/mcp.md, "subscriptions/listen"). Each is the SSE response of one listen request: first the
 * acknowledgement (`notifications/subscriptions/acknowledged`, with the part of the filter honoured:
 * `toolsListChanged`, the only list this server has), then `notifications/tools/list_changed`
 * whenever what the caller's tools/list shows, or what its tools reach, changes: its permissions,
 * its channel access, its person's role or lines. Every frame carries the listen request's id as
 * `io.modelcontextprotocol/subscriptionId`.
 *
 * The credential is checked again when word comes that it changed (CredentialChanges, from any
 * process) and at every keep-alive (MCP_LISTEN_KEEPALIVE_MS) in any case: a credential that no
 * longer works (revoked, expired, rotated away, its person gone) ends its streams with a JSON-RPC
 * error answering the listen request (-32001). Shutting down ends every stream gracefully (the
 * empty listen result). Streams are bounded per credential (MCP_LISTEN_STREAMS_PER_KEY) and per
 * process (MCP_LISTEN_STREAMS_PER_PROCESS); a stream holds none of its credential's running-call
 * slots; a client that does not read is cut off.
 */
@Injectable()
export class McpSubscriptions implements BeforeApplicationShutdown {
  private readonly logger = new Logger(McpSubscriptions.name);
  /** Open streams by credential (API key or grant id). */
  private readonly byCredential = new Map<string, Set<Subscription>>();
  private count = 0;
  private heartbeat?: NodeJS.Timeout;
  private unlisten?: Promise<() => void>;
  private checking = false;

  constructor(
    private readonly tools: ToolRegistry,
    private readonly guard: AuthGuard,
    private readonly changes: CredentialChanges,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Streams open in this process now. */
  get size(): number {
    return this.count;
  }

  /**
   * Opens the stream: RateLimitedError (429) past a bound, 503 when the word on credential changes
   * cannot be subscribed to (Redis). Once it resolves the acknowledgement is sent; the stream ends
   * when the client leaves, the credential stops working, or the process shuts down.
   */
  async open(listen: ListenRequest, sink: EventStreamSink): Promise<void> {
    const { listenStreamsPerKey, listenStreamsPerProcess } = this.config.mcp;
    const credentialId = listen.caller.keyId;
    const held = this.byCredential.get(credentialId)?.size ?? 0;
    const who = isGrantId(credentialId) ? 'this app' : 'this API key';
    if (held >= listenStreamsPerKey) {
      throw new RateLimitedError(`${who} already has ${held} subscriptions/listen streams open here (MCP_LISTEN_STREAMS_PER_KEY): close one first`, 5);
    }
    if (this.count >= listenStreamsPerProcess) throw new RateLimitedError('this server holds as many subscriptions/listen streams as it can: retry later', 5);
    const subscription: Subscription = { ...listen, sink, fingerprint: this.fingerprintOf(listen.caller), started: false, closed: false };
    this.add(subscription);
    sink.onClose(() => this.remove(subscription));
    try {
      await (this.unlisten ??= this.changes.listen((id) => this.changed(id)));
    } catch (error) {
      this.unlisten = undefined;
      this.remove(subscription);
      throw new ServiceUnavailableException(`subscriptions/listen is unavailable: ${(error as Error).message}`);
    }
    if (subscription.closed) return;
    sink.start(this.frame(subscription, 'notifications/subscriptions/acknowledged', { notifications: subscription.honored }));
    subscription.started = true;
    // Nothing asked for that this server can send: the stream has nothing to carry, and ends as a server ends one.
    if (!subscription.honored.toolsListChanged) this.endGracefully(subscription);
  }

  /** Ends every stream as the revision asks of a server that stops: the listen request's (empty) result, then the end of the stream. */
  beforeApplicationShutdown(): void {
    for (const subscriptions of [...this.byCredential.values()]) for (const subscription of [...subscriptions]) this.endGracefully(subscription);
    void this.unlisten?.then((stop) => stop()).catch(() => undefined);
    this.unlisten = undefined;
  }

  private add(subscription: Subscription): void {
    const id = subscription.caller.keyId;
    let set = this.byCredential.get(id);
    if (!set) this.byCredential.set(id, (set = new Set()));
    set.add(subscription);
    this.count += 1;
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.beat(), this.config.mcp.listenKeepaliveMs);
      this.heartbeat.unref();
    }
  }

  private remove(subscription: Subscription): void {
    if (subscription.closed) return;
    subscription.closed = true;
    const id = subscription.caller.keyId;
    const set = this.byCredential.get(id);
    set?.delete(subscription);
    if (set?.size === 0) this.byCredential.delete(id);
    this.count -= 1;
    if (this.count === 0 && this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
  }

  private write(subscription: Subscription, frame: string): void {
    if (!subscription.started || subscription.closed) return;
    subscription.sink.write(frame);
    if (subscription.sink.buffered() > MAX_BUFFERED_BYTES) this.end(subscription);
  }

  private end(subscription: Subscription): void {
    this.remove(subscription);
    subscription.sink.end();
  }

  private endGracefully(subscription: Subscription): void {
    const result = { resultType: 'complete', _meta: { [META.subscriptionId]: subscription.id, [META.serverInfo]: subscription.serverInfo } };
    this.write(subscription, message({ jsonrpc: '2.0', id: subscription.id, result }));
    this.end(subscription);
  }

  /** One notification of the stream, tagged with its subscription id. */
  private frame(subscription: Subscription, method: string, params: object = {}): string {
    return message({ jsonrpc: '2.0', method, params: { ...params, _meta: { [META.subscriptionId]: subscription.id } } });
  }

  /** Word that a credential changed: its streams here are checked now. */
  private changed(credentialId: string): void {
    const subscriptions = this.byCredential.get(credentialId);
    if (subscriptions) void this.check([...subscriptions]);
  }

  /** The keep-alive comment on every stream, then every credential checked again. */
  private beat(): void {
    const all = [...this.byCredential.values()].flatMap((set) => [...set]);
    for (const subscription of all) this.write(subscription, KEEPALIVE_FRAME);
    if (this.checking || all.length === 0) return;
    this.checking = true;
    void this.check(all).finally(() => (this.checking = false));
  }

  /**
   * Resolves each stream's credential again (concurrent look-ups share their statements): one that
   * no longer works ends its stream with an error; one whose tool list or reach changed is told.
   */
  private async check(subscriptions: Subscription[]): Promise<void> {
    await Promise.all(
      subscriptions.map(async (subscription) => {
        let caller: KeyPrincipal | null;
        try {
          caller = await this.guard.callerOf(subscription.credential.token, subscription.credential.request);
        } catch (error) {
          this.logger.warn(`a subscriptions/listen stream's credential was not checked: ${(error as Error).message}`);
          return;
        }
        if (subscription.closed) return;
        if (!caller) return this.endUnauthorized(subscription);
        const fingerprint = this.fingerprintOf(caller);
        if (fingerprint === subscription.fingerprint) return;
        subscription.caller = caller;
        subscription.fingerprint = fingerprint;
        if (subscription.honored.toolsListChanged) this.write(subscription, this.frame(subscription, 'notifications/tools/list_changed'));
      }),
    );
  }

  private endUnauthorized(subscription: Subscription): void {
    const what = isGrantId(subscription.caller.keyId) ? "the app's access token" : 'the API key';
    const text = `${what} no longer works (revoked, expired or replaced): this subscription has ended; listen again with a valid credential`;
    this.write(subscription, message(failure(subscription.id, UNAUTHORIZED, text)));
    this.end(subscription);
  }

  /**
   * What decides the caller's tools/list and what its tools reach: the tools it may call (its role
   * and permissions), its channel access and its lines. A change to any is a list_changed.
   */
  private fingerprintOf(caller: KeyPrincipal): string {
    const tools = this.tools
      .listFor(caller)
      .map((tool) => tool.name)
      .join(',');
    const lines = caller.lines
      .map((line) => line.id)
      .sort()
      .join(',');
    return `${tools}|${caller.channelAccess}|${lines}`;
  }
}

/** One SSE event carrying a JSON-RPC message. */
function message(body: object): string {
  return `event: message\ndata: ${JSON.stringify(body)}\n\n`;
}
