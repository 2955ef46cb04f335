"""Verify a webhook delivery from the messaging sync service (Python 3).

All three forms, with the same rules as src/sdk/verify-webhook.ts:

- Standard Webhooks v1 (standard library only): webhook-id, webhook-timestamp, webhook-signature
  "v1,<base64 HMAC-SHA256(key, b"<id>.<timestamp>." + body)>" entries, space-separated. The key is
  a whsec_ secret base64-decoded, or the 64-hex secret's UTF-8 bytes: the same key.
- Standard Webhooks v1a: "v1a,<base64 ed25519 signature>" entries, verified with the endpoint's
  public key "whpk_<base64 of 32 bytes>" (needs the `cryptography` package, imported only then).
- The legacy header (standard library only):

  X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]
  v1 = lowercase hex HMAC-SHA256(key=secret, msg=b"<t>." + raw body bytes)

- The secret is the 64-character hex string handed out by register_webhook /
  rotate_webhook_secret, used as that string: secret.encode("utf-8"), NOT bytes.fromhex(secret).
- Pass the raw request body bytes (e.g. Flask: request.get_data(); Django: request.body),
  never a re-serialised dict: any byte change breaks the signature.
- Pass the secrets newest first; after a rotation the header carries one v1 per valid secret.
- t must appear once and be ASCII digits; |now - t| must be <= 300 s.
- Digests are compared in constant time (hmac.compare_digest), exactly: uppercase hex fails.
- Keys other than t and v1 are ignored.

Usage in an app:

    try:
        event = verify_webhook(request.get_data(), request.headers.get("X-Service-Signature"),
                               [NEW_SECRET, PREVIOUS_SECRET])
    except WebhookVerificationError as e:
        return {"error": e.code}, 400

Standard Webhooks in an app (keys: hex or whsec_ secrets for v1, whpk_ public keys for v1a):

    seen = RememberedIds()  # or a shared store: Redis SET <id> 1 NX PXAT <remember_until_ms>
    try:
        result = verify_webhook_request(request.get_data(), request.headers, [SIGNING_SECRET], is_new_id=seen)
    except WebhookVerificationError as e:
        return {"error": e.code}, 400
    event = result["envelope"]

Command line (exit 0 and prints id and type when valid, exit 1 and prints the code otherwise):

    python3 verify_webhook.py '<header>' '<secret>[,<previous secret>]' < body.json
    python3 verify_webhook.py --standard '<webhook-id>' '<webhook-timestamp>' '<webhook-signature>' '<key>[,<key>]' < body.json
"""

import base64
import binascii
import hashlib
import hmac
import json
import re
import sys
import time

SIGNATURE_HEADER = "X-Service-Signature"
DEFAULT_TOLERANCE_SECONDS = 300

_DIGITS = re.compile(r"[0-9]+")  # ASCII only; str.isdigit() would accept other scripts' digits
_MAX_SAFE_INTEGER = 2**53 - 1  # the same bound the Node verifier applies


class WebhookVerificationError(Exception):
    """code is one of: MISSING_HEADER, MALFORMED_HEADER, INVALID_TIMESTAMP,
    TIMESTAMP_OUT_OF_TOLERANCE, NO_SIGNATURES, SIGNATURE_MISMATCH, NO_SECRETS, INVALID_PAYLOAD,
    INVALID_KEY, INVALID_ID, REPLAYED_ID."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def verify_webhook(raw_body, header, secrets, tolerance_seconds=DEFAULT_TOLERANCE_SECONDS, now=None):
    """Return the parsed envelope (a dict) or raise WebhookVerificationError.

    raw_body: bytes (or str, encoded as UTF-8). now: unix seconds (defaults to time.time()).
    """
    if not secrets or any(not isinstance(s, str) or s == "" for s in secrets):
        # An empty key would let anyone forge a signature.
        raise WebhookVerificationError("NO_SECRETS", "secrets must be a non-empty list of non-empty strings")
    if isinstance(raw_body, str):
        raw_body = raw_body.encode("utf-8")
    if not isinstance(raw_body, (bytes, bytearray, memoryview)):
        raise TypeError("raw_body must be the raw request body (bytes or str)")
    raw_body = bytes(raw_body)

    if not isinstance(header, str) or header.strip() == "":
        raise WebhookVerificationError("MISSING_HEADER", "missing %s header" % SIGNATURE_HEADER)
    timestamps, signatures = [], []
    for item in header.split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key == "":
            raise WebhookVerificationError("MALFORMED_HEADER", "header must be comma-separated key=value items")
        if key == "t":
            timestamps.append(value)
        elif key == "v1":
            signatures.append(value)
        # any other key (v0, a future v2, ...) is ignored
    if len(timestamps) > 1:
        raise WebhookVerificationError("MALFORMED_HEADER", "header carries t more than once")
    if not timestamps or not _DIGITS.fullmatch(timestamps[0]) or int(timestamps[0]) > _MAX_SAFE_INTEGER:
        raise WebhookVerificationError("INVALID_TIMESTAMP", "t must be a unix timestamp in seconds (digits only)")
    raw_t = timestamps[0]
    if not signatures:
        raise WebhookVerificationError("NO_SIGNATURES", "header carries no v1 signature")

    now_seconds = int(time.time() if now is None else now)
    if abs(now_seconds - int(raw_t)) > tolerance_seconds:
        raise WebhookVerificationError("TIMESTAMP_OUT_OF_TOLERANCE", "timestamp too far from the receiver clock")

    message = raw_t.encode("ascii") + b"." + raw_body
    received = [s.encode("utf-8") for s in signatures]
    for secret in secrets:  # newest first
        expected = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest().encode("ascii")
        if any(hmac.compare_digest(expected, candidate) for candidate in received):
            break
    else:
        raise WebhookVerificationError("SIGNATURE_MISMATCH", "no signature matches any of the secrets")

    return _parse_envelope(raw_body)


def _parse_envelope(raw_body):
    # Only now parse the body.
    try:
        envelope = json.loads(raw_body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WebhookVerificationError("INVALID_PAYLOAD", "body is not UTF-8 JSON")
    if (
        not isinstance(envelope, dict)
        or not isinstance(envelope.get("id"), str) or envelope["id"] == ""
        or not isinstance(envelope.get("type"), str) or envelope["type"] == ""
        or not isinstance(envelope.get("createdAt"), str)
        or not isinstance(envelope.get("endpointId"), str)
        or envelope.get("mode") not in ("concise", "verbose")
        or "data" not in envelope
    ):
        raise WebhookVerificationError("INVALID_PAYLOAD", "body is not an event envelope")
    return envelope


def symmetric_key(secret):
    """The HMAC key of a secret: a whsec_ secret base64-decoded, any other string's UTF-8 bytes."""
    if not isinstance(secret, str) or secret == "":
        raise WebhookVerificationError("INVALID_KEY", "a secret must be a non-empty string")
    if not secret.startswith("whsec_"):
        return secret.encode("utf-8")
    try:
        key = base64.b64decode(secret[len("whsec_"):], validate=True)
    except binascii.Error:
        key = b""
    if not key:
        raise WebhookVerificationError("INVALID_KEY", "a whsec_ secret must be followed by standard base64")
    return key


def _ed25519_key(whpk):
    raw = b""
    try:
        raw = base64.b64decode(whpk[len("whpk_"):], validate=True)
    except binascii.Error:
        pass
    if len(raw) != 32:
        raise WebhookVerificationError("INVALID_KEY", "a public key must be whpk_ followed by the base64 of 32 bytes")
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # pip install cryptography

    return Ed25519PublicKey.from_public_bytes(raw)


def _header(headers, name):
    for key in headers.keys():  # a dict, Flask's request.headers, Django's request.headers
        if key.lower() == name:
            return headers[key]
    return None


class RememberedIds:
    """Accepted webhook ids, each kept until its time passes: pass as is_new_id to refuse replays."""

    def __init__(self):
        self._until = {}

    def __call__(self, webhook_id, remember_until_ms):
        now_ms = time.time() * 1000
        self._until = {k: v for k, v in self._until.items() if v > now_ms}
        if webhook_id in self._until:
            return False
        self._until[webhook_id] = remember_until_ms
        return True


def verify_standard_webhook(raw_body, headers, keys, tolerance_seconds=DEFAULT_TOLERANCE_SECONDS, now=None, is_new_id=None):
    """Verify webhook-id / webhook-timestamp / webhook-signature. Return a dict with webhook_id,
    timestamp, version ("v1" or "v1a"), remember_until_ms (until when to remember the id to refuse a
    replay) and envelope; or raise WebhookVerificationError."""
    if not keys:
        raise WebhookVerificationError("NO_SECRETS", "no webhook secrets or public keys configured")
    secrets = [symmetric_key(k) for k in keys if not k.startswith("whpk_")]
    public_keys = [_ed25519_key(k) for k in keys if k.startswith("whpk_")]
    if isinstance(raw_body, str):
        raw_body = raw_body.encode("utf-8")
    raw_body = bytes(raw_body)

    webhook_id = _header(headers, "webhook-id")
    raw_t = _header(headers, "webhook-timestamp")
    signature = _header(headers, "webhook-signature")
    for name, value in (("webhook-id", webhook_id), ("webhook-timestamp", raw_t), ("webhook-signature", signature)):
        if not isinstance(value, str) or value.strip() == "":
            raise WebhookVerificationError("MISSING_HEADER", "missing %s header" % name)
    if re.search(r"[.\s]", webhook_id):
        raise WebhookVerificationError("INVALID_ID", 'webhook-id must not carry "." or whitespace')
    if not _DIGITS.fullmatch(raw_t) or int(raw_t) > _MAX_SAFE_INTEGER:
        raise WebhookVerificationError("INVALID_TIMESTAMP", "webhook-timestamp must be unix seconds (digits only)")
    now_seconds = int(time.time() if now is None else now)
    if abs(now_seconds - int(raw_t)) > tolerance_seconds:
        raise WebhookVerificationError("TIMESTAMP_OUT_OF_TOLERANCE", "timestamp too far from the receiver clock")

    entries = []
    for entry in signature.split(" "):
        if entry == "":
            continue
        version, sep, value = entry.partition(",")
        if not sep or version == "":
            raise WebhookVerificationError("MALFORMED_HEADER", "webhook-signature entries must be <version>,<base64>")
        entries.append((version, value))
    if not entries:
        raise WebhookVerificationError("NO_SIGNATURES", "webhook-signature carries no signature")

    content = webhook_id.encode("utf-8") + b"." + raw_t.encode("ascii") + b"." + raw_body
    version = None
    v1 = [value.encode("utf-8") for v, value in entries if v == "v1"]
    for key in secrets:
        expected = base64.b64encode(hmac.new(key, content, hashlib.sha256).digest())
        if any(hmac.compare_digest(expected, candidate) for candidate in v1):
            version = "v1"
            break
    if version is None and public_keys:
        from cryptography.exceptions import InvalidSignature

        for public_key in public_keys:
            for v, value in entries:
                if v != "v1a":
                    continue
                try:
                    public_key.verify(base64.b64decode(value), content)
                    version = "v1a"
                    break
                except (InvalidSignature, binascii.Error, ValueError):
                    pass
            if version:
                break
    if version is None:
        raise WebhookVerificationError("SIGNATURE_MISMATCH", "no signature matches any of the keys")

    envelope = _parse_envelope(raw_body)
    remember_until_ms = (int(raw_t) + tolerance_seconds + 1) * 1000
    if is_new_id is not None and not is_new_id(webhook_id, remember_until_ms):
        raise WebhookVerificationError("REPLAYED_ID", "webhook-id %s was accepted before (a replay)" % webhook_id)
    return {"webhook_id": webhook_id, "timestamp": int(raw_t), "version": version, "remember_until_ms": remember_until_ms, "envelope": envelope}


def verify_webhook_request(raw_body, headers, keys, tolerance_seconds=DEFAULT_TOLERANCE_SECONDS, now=None, is_new_id=None):
    """Standard Webhooks when the request carries webhook-signature, else (or when that fails and
    the legacy header is there too) the legacy header, whose secrets may be given in hex or whsec_ form."""
    secrets = [symmetric_key(k).decode("utf-8") for k in keys if not k.startswith("whpk_")]
    header = _header(headers, SIGNATURE_HEADER.lower())
    if _header(headers, "webhook-signature") is not None:
        try:
            return verify_standard_webhook(raw_body, headers, keys, tolerance_seconds, now, is_new_id)
        except WebhookVerificationError as error:
            # A v1a delivery with the legacy header on: a receiver holding only the secret verifies that.
            if error.code != "SIGNATURE_MISMATCH" or header is None or not secrets:
                raise
            try:
                return _verify_legacy(raw_body, header, secrets, tolerance_seconds, now, is_new_id)
            except WebhookVerificationError:
                raise error
    return _verify_legacy(raw_body, header, secrets, tolerance_seconds, now, is_new_id)


def _verify_legacy(raw_body, header, secrets, tolerance_seconds, now, is_new_id):
    envelope = verify_webhook(raw_body, header, secrets, tolerance_seconds, now)
    raw_t = [item.partition("=")[2].strip() for item in header.split(",") if item.partition("=")[0].strip() == "t"][0]
    remember_until_ms = (int(raw_t) + tolerance_seconds + 1) * 1000
    if is_new_id is not None and not is_new_id(envelope["id"], remember_until_ms):
        raise WebhookVerificationError("REPLAYED_ID", "event %s was accepted before (a replay)" % envelope["id"])
    return {"webhook_id": envelope["id"], "timestamp": int(raw_t), "version": "legacy", "remember_until_ms": remember_until_ms, "envelope": envelope}


if __name__ == "__main__":
    try:
        if len(sys.argv) == 6 and sys.argv[1] == "--standard":
            headers = {"webhook-id": sys.argv[2], "webhook-timestamp": sys.argv[3], "webhook-signature": sys.argv[4]}
            event = verify_standard_webhook(sys.stdin.buffer.read(), headers, [k for k in sys.argv[5].split(",") if k])["envelope"]
        elif len(sys.argv) == 3:
            event = verify_webhook(sys.stdin.buffer.read(), sys.argv[1], [s for s in sys.argv[2].split(",") if s])
        else:
            sys.exit(
                "usage: python3 verify_webhook.py '<header>' '<secret>[,<previous>]' < body.json\n"
                "       python3 verify_webhook.py --standard '<webhook-id>' '<webhook-timestamp>' '<webhook-signature>' '<key>[,<key>]' < body.json"
            )
    except WebhookVerificationError as error:
        print(error.code, file=sys.stderr)
        sys.exit(1)
    print("verified", event["id"], event["type"])
