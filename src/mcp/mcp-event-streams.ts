import { Request, Response } from 'express';
import { Principal } from '../identity/principal';
import { eventStreamOf, EventStreamSink } from '../common/event-stream';
import { FeedRefusal } from '../event-feed/event-feed.errors';
import { CheckedStream, EventStreams, StreamOutput, StreamRequest } from '../event-feed/event-streams';
import { failure, JsonRpcId } from './json-rpc';
import { McpAnswer } from './mcp-answer';
import { rpcErrorOf } from './mcp-events';
import { META } from './protocol-eras';

/** An events/stream request whose checks passed: the controller answers it with its stream. */
export interface AcceptedStream {
  id: JsonRpcId;
  checked: CheckedStream;
  era: 'legacy' | 'modern';
}

/**
 * events/stream in either era (docs/mcp.md, "events/stream"): every check of the request now, so
 * an invalid subscription is the request's JSON-RPC error and no stream opens; else the answer
 * carries the stream for the controller to open.
 */
export function streamAnswer(streams: EventStreams, id: JsonRpcId, params: unknown, caller: Principal, era: AcceptedStream['era']): McpAnswer {
  const request = (typeof params === 'object' && params !== null && !Array.isArray(params) ? params : {}) as StreamRequest;
  try {
    return { status: 200, eventStream: { id, checked: streams.check(caller, request), era } };
  } catch (error) {
    if (!(error instanceof FeedRefusal)) throw error;
    const rpc = rpcErrorOf(error);
    return { status: 200, body: failure(id, rpc.code, rpc.message, rpc.data) };
  }
}

/**
 * Opens the stream on the response: the draft's notifications as server-sent `data:` frames, each
 * tagged with the request's id as `io.modelcontextprotocol/subscriptionId`; the final frame is the
 * request's (empty) result. A bound reached is answered as JSON: 429, Retry-After and -32013.
 */
export function openEventStream(
  streams: EventStreams,
  accepted: AcceptedStream,
  caller: Principal,
  recheck: () => Promise<Principal | null>,
  req: Request,
  res: Response,
  serverInfo: object,
): McpAnswer | undefined {
  try {
    streams.open(caller, accepted.checked, outputOf(eventStreamOf(req, res), res, accepted, serverInfo), recheck);
    return undefined;
  } catch (error) {
    if (!(error instanceof FeedRefusal) || error.kind !== 'exhausted') throw error;
    const rpc = rpcErrorOf(error);
    return { status: 429, headers: { 'Retry-After': '5' }, body: failure(accepted.id, rpc.code, rpc.message, rpc.data) };
  }
}

function outputOf(sink: EventStreamSink, res: Response, accepted: AcceptedStream, serverInfo: object): StreamOutput {
  const tag = { [META.subscriptionId]: accepted.id };
  let started = false;
  const send = (body: object) => {
    const frame = `event: message\ndata: ${JSON.stringify(body)}\n\n`;
    if (started) sink.write(frame);
    else {
      sink.start(frame);
      started = true;
    }
  };
  const notify = (method: string, params: object) => send({ jsonrpc: '2.0', method, params: { ...params, _meta: tag } });
  return {
    active: (cursor, truncated) => notify('notifications/events/active', { cursor, truncated }),
    event: (occurrence) => notify('notifications/events/event', occurrence),
    heartbeat: (cursor) => notify('notifications/events/heartbeat', { cursor }),
    terminated: (refusal) => {
      const rpc = rpcErrorOf(refusal);
      notify('notifications/events/terminated', { error: { code: rpc.code, message: rpc.message, data: rpc.data } });
    },
    finish: () => {
      // The draft's StreamEventsResult is empty; a 2026-07-28 result also says it is complete and who answered.
      const result = accepted.era === 'modern' ? { resultType: 'complete', _meta: { ...tag, [META.serverInfo]: serverInfo } } : { _meta: {} };
      if (started) send({ jsonrpc: '2.0', id: accepted.id, result });
      sink.end();
    },
    cut: () => sink.cut(),
    buffered: () => sink.buffered(),
    // A response that closes meanwhile ends the stream by itself (onClose); the wait then just times out.
    drained: (ms) =>
      new Promise<boolean>((resolve) => {
        if (res.closed) return resolve(false);
        const done = (taken: boolean) => {
          clearTimeout(timer);
          res.off('drain', onDrain);
          resolve(taken);
        };
        const onDrain = () => done(true);
        const timer = setTimeout(() => done(false), ms);
        res.once('drain', onDrain);
      }),
    onClose: (listener) => sink.onClose(listener),
  };
}
