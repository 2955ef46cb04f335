import { Check, Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A public OAuth client: self-registered, or known by its metadata document and approved once (docs/mcp.md "Connecting Claude, ChatGPT and other OAuth clients"). */
@Entity({ name: 'oauth_clients' })
@Check('oauth_clients_redirect_uris_check', 'cardinality(redirect_uris) BETWEEN 1 AND 10')
export class OAuthClient {
  @PrimaryColumn({ name: 'client_id', type: 'text' })
  clientId: string;

  @Column({ name: 'client_name', type: 'text', nullable: true })
  clientName: string | null;

  @Column({ name: 'redirect_uris', type: 'text', array: true })
  redirectUris: string[];

  /** The client's registration metadata (without its id), or, for a metadata document client, the document's registration as last approved. */
  @Column({ type: 'jsonb' })
  metadata: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}
