import { Principal } from '../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../tools/tool.decorator';
import { ByEndpointId, byEndpointId, endpointSchema, registerInput, secretSchema, signingSecretSchema, updateInput } from './webhook.schemas';
import { EndpointView } from './webhook-endpoints.repository';
import { webhookInput, WebhooksService } from './webhooks.service';
import { noArguments } from '../tools/tool-schemas';

const endpointResult = { type: 'object', properties: { endpoint: endpointSchema }, required: ['endpoint'] } as const;
const endpointWithSecret = {
  type: 'object',
  properties: { endpoint: endpointSchema, secret: secretSchema, signingSecret: signingSecretSchema },
  required: ['endpoint', 'secret', 'signingSecret'],
} as const;

@McpTool({
  name: 'list_webhooks',
  title: 'List webhooks',
  description: "The caller's webhook endpoints (secrets are never listed).",
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: noArguments,
  outputSchema: { type: 'object', properties: { endpoints: { type: 'array', items: endpointSchema } }, required: ['endpoints'] },
})
export class ListWebhooksTool implements McpToolHandler<object, { endpoints: EndpointView[] }> {
  constructor(private readonly webhooks: WebhooksService) {}

  async execute(_: object, caller: Principal) {
    return { endpoints: await this.webhooks.list(caller) };
  }
}

@McpTool({
  name: 'get_webhook',
  title: 'Get a webhook',
  description: "One of the caller's webhook endpoints.",
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: byEndpointId,
  outputSchema: endpointResult,
})
export class GetWebhookTool implements McpToolHandler<ByEndpointId, { endpoint: EndpointView }> {
  constructor(private readonly webhooks: WebhooksService) {}

  async execute(args: ByEndpointId, caller: Principal) {
    return { endpoint: await this.webhooks.get(caller, args.endpointId) };
  }
}

@McpTool({
  name: 'register_webhook',
  title: 'Register a webhook',
  description:
    'Registers an endpoint that receives signed event POSTs (Standard Webhooks headers, and X-Service-Signature unless legacySignature is false). ' +
    'Returns the endpoint and its signing secret, as hex (secret) and as whsec_ (signingSecret); both are shown only here. ' +
    'signatureVersion v1a signs with ed25519 instead: endpoint.publicKey verifies. ' +
    'Endpoints per user are capped by the org tier (STARTER 1, PRO 3, POWER 10) or an administrator grant.',
  kind: 'write',
  openWorld: true,
  withheldFromText: ['secret', 'signingSecret'],
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: registerInput,
  outputSchema: endpointWithSecret,
})
export class RegisterWebhookTool implements McpToolHandler<ToolArgs<typeof registerInput>> {
  constructor(private readonly webhooks: WebhooksService) {}

  execute(args: ToolArgs<typeof registerInput>, caller: Principal) {
    return this.webhooks.register(caller, webhookInput(args));
  }
}

@McpTool({
  name: 'update_webhook',
  title: 'Update a webhook',
  description:
    'Changes an endpoint. A supplied channelScope replaces the previous scope wholesale. status "disabled" stops delivery; ' +
    '"active" re-enables it and resets the consecutive-failure counter. signatureVersion v1a makes an ed25519 key pair (endpoint.publicKey); ' +
    'v1 drops it. legacySignature false stops the X-Service-Signature header.',
  kind: 'write',
  overwrites: true,
  openWorld: true,
  idempotent: true,
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: updateInput,
  outputSchema: endpointResult,
})
export class UpdateWebhookTool implements McpToolHandler<ToolArgs<typeof updateInput>> {
  constructor(private readonly webhooks: WebhooksService) {}

  async execute({ endpointId, ...patch }: ToolArgs<typeof updateInput>, caller: Principal) {
    return { endpoint: await this.webhooks.update(caller, endpointId, webhookInput(patch)) };
  }
}

@McpTool({
  name: 'rotate_webhook_secret',
  title: 'Rotate a webhook secret',
  description:
    'Issues a new signing secret (hex and whsec_), returned only here, and for a v1a endpoint a new ed25519 key pair (endpoint.publicKey). ' +
    'For 24 hours deliveries carry signatures with the new and with the previous secret (and key).',
  kind: 'write',
  withheldFromText: ['secret', 'signingSecret'],
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: byEndpointId,
  outputSchema: endpointWithSecret,
})
export class RotateWebhookSecretTool implements McpToolHandler<ByEndpointId> {
  constructor(private readonly webhooks: WebhooksService) {}

  execute(args: ByEndpointId, caller: Principal) {
    return this.webhooks.rotateSecret(caller, args.endpointId);
  }
}

@McpTool({
  name: 'delete_webhook',
  title: 'Delete a webhook',
  description: 'Deletes an endpoint irreversibly, with its delivery log and waiting retries.',
  kind: 'destructive',
  idempotent: true,
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: byEndpointId,
  outputSchema: {
    type: 'object',
    properties: { deleted: { type: 'boolean', const: true }, endpointId: { type: 'string' } },
    required: ['deleted', 'endpointId'],
  },
})
export class DeleteWebhookTool implements McpToolHandler<ByEndpointId> {
  constructor(private readonly webhooks: WebhooksService) {}

  execute(args: ByEndpointId, caller: Principal) {
    return this.webhooks.delete(caller, args.endpointId);
  }
}

export const WEBHOOK_TOOLS = [ListWebhooksTool, GetWebhookTool, RegisterWebhookTool, UpdateWebhookTool, RotateWebhookSecretTool, DeleteWebhookTool];
