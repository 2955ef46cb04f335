import { Principal } from '../identity/principal';
import { McpTool, McpToolHandler } from '../tools/tool.decorator';
import { noArguments } from '../tools/tool-schemas';

@McpTool({
  name: 'list_phone_numbers',
  title: 'List phone numbers',
  description: "The phone numbers this key may use (live access narrowed by the key's allowlist). Their ids go into a webhook channelScope.",
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: noArguments,
  outputSchema: {
    type: 'object',
    properties: {
      phoneNumbers: {
        type: 'array',
        items: {
          type: 'object',
          properties: { id: { type: 'string' }, channelType: { const: 'PHONE_NUMBER' }, phoneNumber: { type: 'string' } },
          required: ['id', 'channelType', 'phoneNumber'],
        },
      },
    },
    required: ['phoneNumbers'],
  },
})
export class ListPhoneNumbersTool implements McpToolHandler {
  async execute(_: object, caller: Principal) {
    return {
      phoneNumbers: caller.lines
        .filter((line) => line.type === 'PHONE_NUMBER')
        .map((line) => ({ id: line.id, channelType: line.type, phoneNumber: line.address })),
    };
  }
}
