import { toolPermission, ToolSpec } from '../tools/tool.decorator';
import { refusal } from './tool-registry';

const ALL = ['read', 'send', 'webhooks'] as const;

function tool(spec: Partial<ToolSpec> & Pick<ToolSpec, 'kind'>) {
  const full = { name: 'some_tool', minRole: 'MEMBER', ...spec } as ToolSpec;
  return { spec: full, permission: toolPermission(full) };
}

describe('toolPermission', () => {
  it('follows the kind unless the tool names its permission', () => {
    expect(toolPermission({ kind: 'read' })).toBe('read');
    expect(toolPermission({ kind: 'write' })).toBe('send');
    expect(toolPermission({ kind: 'destructive' })).toBe('send');
    expect(toolPermission({ kind: 'read', permission: 'webhooks' })).toBe('webhooks');
    expect(toolPermission({ kind: 'destructive', permission: 'webhooks' })).toBe('webhooks');
  });
});

describe('refusal', () => {
  it('lets a caller through when its role and its key permit the tool', () => {
    expect(refusal(tool({ kind: 'read' }), { role: 'MEMBER', permissions: ['read'] })).toBeNull();
    expect(refusal(tool({ kind: 'write' }), { role: 'OWNER', permissions: [...ALL] })).toBeNull();
  });

  it('names the tool and the missing permission, and what the key has', () => {
    expect(refusal(tool({ name: 'send_sms', kind: 'write' }), { role: 'OWNER', permissions: ['read', 'webhooks'] })).toBe(
      'send_sms needs the send permission, which this API key does not have (it has read, webhooks)',
    );
  });

  it('lets a draft-only key call a draftable send tool, and no other tool that needs send', () => {
    expect(refusal(tool({ name: 'send_sms', kind: 'write', draftable: true }), { role: 'MEMBER', permissions: ['read', 'draft'] })).toBeNull();
    expect(refusal(tool({ name: 'approve_agent_turn', kind: 'write' }), { role: 'MEMBER', permissions: ['read', 'draft'] })).toBe(
      'approve_agent_turn needs the send permission, which this API key does not have (it has read, draft)',
    );
    expect(refusal(tool({ name: 'send_sms', kind: 'write', draftable: true }), { role: 'MEMBER', permissions: ['read'] })).toBe(
      'send_sms needs the send or draft permission, which this API key does not have (it has read)',
    );
  });

  it('never lets a permission lift the role: a MEMBER key with every permission is refused an OWNER tool, by its role', () => {
    expect(refusal(tool({ name: 'owner_tool', kind: 'write', minRole: 'OWNER' }), { role: 'MEMBER', permissions: [...ALL] })).toBe(
      'owner_tool needs the OWNER role or higher; this key acts as a MEMBER',
    );
    expect(
      refusal(tool({ name: 'owner_tool', kind: 'write', minRole: 'OWNER', permission: 'webhooks' }), { role: 'ADMIN', permissions: ['webhooks'] }),
    ).toMatch(/needs the OWNER role/);
  });
});
