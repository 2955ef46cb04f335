import { Principal } from '../../../identity/principal';
import { McpTool, McpToolHandler } from '../../../tools/tool.decorator';
import { MailboxHealthService } from './mailbox-health.service';
import { noArguments, nullableString } from '../../../tools/tool-schemas';

@McpTool({
  name: 'list_email_accounts',
  title: 'List email accounts',
  description:
    "The email accounts this key may use (live access narrowed by the key's allowlist), with whether each is syncing " +
    '(isActive) and when it last synced. Their ids go into a webhook channelScope.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: noArguments,
  outputSchema: {
    type: 'object',
    properties: {
      emailAccounts: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            channelType: { const: 'EMAIL_ACCOUNT' },
            emailAddress: { type: 'string' },
            isActive: { type: 'boolean' },
            lastSyncedAt: nullableString,
          },
          required: ['id', 'channelType', 'emailAddress', 'isActive', 'lastSyncedAt'],
        },
      },
    },
    required: ['emailAccounts'],
  },
})
export class ListEmailAccountsTool implements McpToolHandler {
  constructor(private readonly health: MailboxHealthService) {}

  async execute(_: object, caller: Principal) {
    const accounts = await this.health.emailAccounts(caller);
    return { emailAccounts: accounts.map(({ id, ...rest }) => ({ id, channelType: 'EMAIL_ACCOUNT' as const, ...rest })) };
  }
}
