import * as ipaddr from 'ipaddr.js';
import { stringFault } from '../common/well-formed';

/**
 * The one rule for a client's registration metadata (RFC 7591 §2), whether the client registers
 * itself (Dynamic Client Registration, POST /oauth/register) or publishes a Client ID Metadata
 * Document (client-metadata-documents.ts): the fields the service understands, each bounded, and
 * the whole bounded again, so that nobody can store much with a registration nobody signed in to
 * make (docs/mcp.md, "Registration metadata"). Fields the service does not understand are dropped,
 * as RFC 7591 §2 asks; so are `jwks`, `jwks_uri` and `software_statement` (public clients only,
 * no software statements), and a client's own `client_id` or `client_secret` in a registration.
 */

/** A client's name, in characters (code points): what the consent page and Connected apps show. */
export const CLIENT_NAME_MAX_LENGTH = 200;
/** Each URI (redirect URIs included), in characters. */
export const URI_MAX_LENGTH = 2000;
/** Redirect URIs a client may register. */
export const REDIRECT_URIS_MAX = 10;
/** `scope`, the space-separated scopes the client may ask for, in characters. */
export const SCOPE_MAX_LENGTH = 1000;
/** `contacts`: at most this many, each at most CONTACT_MAX_LENGTH characters (an email address is at most 254). */
export const CONTACTS_MAX = 10;
export const CONTACT_MAX_LENGTH = 254;
/** `software_id`, `software_version`, `token_endpoint_auth_method`, in characters. */
export const SHORT_TEXT_MAX_LENGTH = 200;
/** The metadata kept of one client, as JSON in UTF-8: what passes the bounds above may still add up to more. */
export const CLIENT_METADATA_MAX_BYTES = 8 * 1024;

const LOOPBACK_REDIRECT_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** Characters that reorder how a name reads (bidirectional overrides, isolates and marks): a name could show another app's name. */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** Where the metadata comes from: the rules differ only where said. */
export type MetadataSource = 'registration' | 'document';

/** What the service keeps of a client's registration: the fields it understands, normalized. */
export interface ClientMetadata {
  redirect_uris: string[];
  /** Always `none`: every client is public. */
  token_endpoint_auth_method: 'none';
  grant_types: string[];
  response_types: string[];
  client_name?: string;
  client_uri?: string;
  logo_uri?: string;
  tos_uri?: string;
  policy_uri?: string;
  scope?: string;
  contacts?: string[];
  software_id?: string;
  software_version?: string;
  /**
   * What kind of app the client says it is (OpenID Connect Dynamic Client Registration; the MCP
   * authorization revision 2026-07-28 asks clients to send it): `native` (desktop, mobile, CLI, a
   * web app on localhost) or `web`. Kept and answered as sent; absent when not sent. The service
   * is not an OpenID provider and applies no redirect rule of its own by type (docs/mcp.md).
   */
  application_type?: ApplicationType;
}

export const APPLICATION_TYPES = ['native', 'web'] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];

/** A field of the metadata that breaks the rule: its name, and a message that starts with it. */
export class ClientMetadataProblem extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The metadata as the service keeps it, or a ClientMetadataProblem naming the first field at
 * fault. A registration may ask for any `token_endpoint_auth_method` and gets `none` (RFC 7591
 * §3.2.1 lets the server replace it); a document must say `none` or nothing, and hold no
 * `client_secret` (its client is public by the draft). Default `grant_types`: a registration
 * `authorization_code` and `refresh_token` (what MCP hosts use), a document `authorization_code`
 * (RFC 7591's default). Other URIs than redirect URIs: `https` in a document, `http` or `https`
 * in a registration.
 */
export function clientMetadataOf(input: Record<string, unknown>, source: MetadataSource): ClientMetadata {
  if (source === 'document') {
    if ('client_secret' in input || 'client_secret_expires_at' in input)
      throw new ClientMetadataProblem('client_secret', 'it must not contain client_secret (a metadata document client is public)');
    const method = input.token_endpoint_auth_method ?? 'none';
    if (method !== 'none') {
      throw new ClientMetadataProblem(
        'token_endpoint_auth_method',
        `token_endpoint_auth_method must be none (public client); ${JSON.stringify(method).slice(0, SHORT_TEXT_MAX_LENGTH)} is not supported here`,
      );
    }
  } else if (input.token_endpoint_auth_method !== undefined) {
    text('token_endpoint_auth_method', input.token_endpoint_auth_method, SHORT_TEXT_MAX_LENGTH);
  }
  const metadata: ClientMetadata = {
    redirect_uris: redirectUris(input.redirect_uris),
    token_endpoint_auth_method: 'none',
    grant_types: grantTypes(input.grant_types, source === 'registration' ? ['authorization_code', 'refresh_token'] : ['authorization_code']),
    response_types: responseTypes(input.response_types),
  };
  if (input.client_name !== undefined) metadata.client_name = clientName(input.client_name);
  for (const field of ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'] as const) {
    if (input[field] !== undefined) metadata[field] = otherUri(field, input[field], source);
  }
  if (input.scope !== undefined) metadata.scope = text('scope', input.scope, SCOPE_MAX_LENGTH);
  if (input.contacts !== undefined) metadata.contacts = contacts(input.contacts);
  if (input.software_id !== undefined) metadata.software_id = text('software_id', input.software_id, SHORT_TEXT_MAX_LENGTH);
  if (input.software_version !== undefined) metadata.software_version = text('software_version', input.software_version, SHORT_TEXT_MAX_LENGTH);
  if (input.application_type !== undefined) metadata.application_type = applicationType(input.application_type);
  const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (bytes > CLIENT_METADATA_MAX_BYTES) {
    throw new ClientMetadataProblem('metadata', `the client metadata together must be at most ${CLIENT_METADATA_MAX_BYTES} bytes of JSON (it is ${bytes})`);
  }
  return metadata;
}

/** A redirect URI a public client may register: https, or http on a loopback address; absolute, no fragment. */
export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `redirect_uris: ${uri} is not an absolute URL`;
  }
  if (url.hash) return `redirect_uris: ${uri} must not have a fragment`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_REDIRECT_HOSTS.has(url.hostname)) return null;
  return `redirect_uris: ${uri} must be https, or http on a loopback address (127.0.0.1, [::1], localhost)`;
}

/**
 * True when a redirect URI's host is this computer: `localhost` (and names under it), or an
 * address of the loopback ranges (127.0.0.0/8, ::1, their IPv4-mapped forms). Any program on the
 * person's computer can listen there and claim to be the app, so the consent page warns
 * (MCP authorization 2026-07-28, "Localhost Redirect URI Risks").
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(host)) return false;
  return ipaddr.process(host).range() === 'loopback';
}

function redirectUris(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > REDIRECT_URIS_MAX) {
    throw new ClientMetadataProblem('redirect_uris', `redirect_uris must list between 1 and ${REDIRECT_URIS_MAX} URLs`);
  }
  return value.map((uri, i) => {
    const checked = text(`redirect_uris[${i}]`, uri, URI_MAX_LENGTH);
    const problem = redirectUriProblem(checked);
    if (problem) throw new ClientMetadataProblem('redirect_uris', problem);
    return checked;
  });
}

function grantTypes(value: unknown, fallback: string[]): string[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.length === 0 || value.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
    throw new ClientMetadataProblem('grant_types', 'grant_types: only authorization_code and refresh_token are supported');
  }
  return [...new Set(value as string[])];
}

function responseTypes(value: unknown): string[] {
  if (value === undefined) return ['code'];
  if (!Array.isArray(value) || value.length === 0 || value.some((r) => r !== 'code')) {
    throw new ClientMetadataProblem('response_types', 'response_types: only code is supported');
  }
  return ['code'];
}

function applicationType(value: unknown): ApplicationType {
  if (!APPLICATION_TYPES.includes(value as ApplicationType)) throw new ClientMetadataProblem('application_type', 'application_type must be native or web');
  return value as ApplicationType;
}

function clientName(value: unknown): string {
  const name = text('client_name', value, CLIENT_NAME_MAX_LENGTH);
  if (name.trim() === '') throw new ClientMetadataProblem('client_name', 'client_name must not be blank');
  if (BIDI.test(name)) throw new ClientMetadataProblem('client_name', 'client_name must not contain bidirectional formatting characters');
  return name;
}

function otherUri(field: string, value: unknown, source: MetadataSource): string {
  const uri = text(field, value, URI_MAX_LENGTH);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new ClientMetadataProblem(field, `${field} must be an absolute URL`);
  }
  if (source === 'document' && url.protocol !== 'https:') throw new ClientMetadataProblem(field, `${field} must be an https URL`);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ClientMetadataProblem(field, `${field} must be an http or https URL`);
  return uri;
}

function contacts(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > CONTACTS_MAX) throw new ClientMetadataProblem('contacts', `contacts must list at most ${CONTACTS_MAX} addresses`);
  return value.map((contact, i) => text(`contacts[${i}]`, contact, CONTACT_MAX_LENGTH));
}

/** A string of at most `max` characters, well-formed, without control characters. */
function text(field: string, value: unknown, max: number): string {
  if (typeof value !== 'string') throw new ClientMetadataProblem(field, `${field} must be a string`);
  const length = [...value].length;
  if (length > max) throw new ClientMetadataProblem(field, `${field} must be at most ${max} characters (it has ${length})`);
  if (stringFault(value) !== null || CONTROL.test(value))
    throw new ClientMetadataProblem(field, `${field} must be well-formed text without control characters`);
  return value;
}
