import { Principal } from '../identity/principal';
import { EventSubscriptionsService, SubscribeRequest } from '../event-feed/event-subscriptions.service';
import { asEventsError } from './mcp-events';

/** The MCP Events webhook-mode methods. */
export const SUBSCRIPTION_METHODS = ['events/subscribe', 'events/unsubscribe'] as const;
export type SubscriptionMethod = (typeof SUBSCRIPTION_METHODS)[number];

export function isSubscriptionMethod(method: string): method is SubscriptionMethod {
  return (SUBSCRIPTION_METHODS as readonly string[]).includes(method);
}

/** events/subscribe and events/unsubscribe in either protocol era: the service's answer, or its refusal as the draft's JSON-RPC error. */
export async function answerEventSubscriptions(
  subscriptions: EventSubscriptionsService,
  method: SubscriptionMethod,
  params: unknown,
  caller: Principal,
): Promise<object> {
  const request = (typeof params === 'object' && params !== null && !Array.isArray(params) ? params : {}) as SubscribeRequest & { id?: unknown };
  try {
    return method === 'events/subscribe' ? await subscriptions.subscribe(caller, request) : await subscriptions.unsubscribe(caller, request);
  } catch (error) {
    throw asEventsError(error);
  }
}
