import type { ComponentChildren } from 'preact';
import { Person } from '../../identity/principal';
import { EndpointView } from '../../webhooks/webhook-endpoints.repository';
import { JWKS_MAX_AGE_SECONDS, jwksPath } from '../../webhooks/webhook-keys';
import { MANUAL_DISABLE_REASON } from '../../webhooks/webhooks.service';

const CURRENT = '/settings/webhooks';

export function Breadcrumb(props: { trail: Array<[string, string]> }) {
  return (
    <nav aria-label="Breadcrumb" class="breadcrumb">
      <ol>
        <li>
          <a href={CURRENT}>Webhooks</a>
        </li>
        {props.trail.map(([href, label]) => (
          <li key={href}>
            <a href={href}>{label}</a>
          </li>
        ))}
      </ol>
    </nav>
  );
}

export function scopeText(endpoint: EndpointView, person: Person): string {
  if (endpoint.channelScope.allChannels) return 'All lines';
  return endpoint.channelScope.channels.map((c) => person.lines.find((l) => l.id === c.channelId)?.address ?? c.channelId).join(', ');
}

function statusText(endpoint: EndpointView): string {
  if (endpoint.status === 'active') return 'Active';
  if (!endpoint.disabledReason || endpoint.disabledReason === MANUAL_DISABLE_REASON) return 'Disabled';
  return `Disabled: ${endpoint.disabledReason}`;
}

export function Status(props: { endpoint: EndpointView }) {
  return <span class={`status status-${props.endpoint.status}`}>{statusText(props.endpoint)}</span>;
}

/** A read-only value with a Copy button (`/static/app.js`) and a hint under it. */
export function CopyField(props: { id: string; label: string; value: string; children: ComponentChildren }) {
  return (
    <div class="field secret">
      <label for={props.id}>{props.label}</label>
      <div class="copy-row">
        <input id={props.id} type="text" readOnly value={props.value} aria-describedby={`${props.id}-hint`} autocomplete="off" spellcheck={false} />
        <button type="button" data-copy={props.id}>
          Copy
        </button>
        <span class="copy-status" role="status" data-copy-status={props.id}></span>
      </div>
      <p class="hint" id={`${props.id}-hint`}>
        {props.children}
      </p>
    </div>
  );
}

/** A v1a endpoint's public key with a Copy button and its JWK Set URL. */
export function PublicKeyField(props: { endpoint: EndpointView }) {
  const jwks = jwksPath(props.endpoint.id);
  return (
    <CopyField id="publicKey" label="Public key (v1a)" value={props.endpoint.publicKey ?? ''}>
      Not a secret. Also published as a JWK Set at <a href={jwks}>{jwks}</a> (cached up to {JWKS_MAX_AGE_SECONDS / 60} minutes).
    </CopyField>
  );
}
