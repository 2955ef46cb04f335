"""Verify a webhook delivery from the messaging sync service (Python 3, standard library only).

Same rules as src/sdk/verify-webhook.ts:

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

Command line (exit 0 and prints id and type when valid, exit 1 and prints the code otherwise):

    python3 verify_webhook.py '<header>' '<secret>[,<previous secret>]' < body.json
"""

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
    TIMESTAMP_OUT_OF_TOLERANCE, NO_SIGNATURES, SIGNATURE_MISMATCH, NO_SECRETS, INVALID_PAYLOAD."""

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


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 verify_webhook.py '<header>' '<secret>[,<previous>]' < body.json")
    try:
        event = verify_webhook(sys.stdin.buffer.read(), sys.argv[1], [s for s in sys.argv[2].split(",") if s])
    except WebhookVerificationError as error:
        print(error.code, file=sys.stderr)
        sys.exit(1)
    print("verified", event["id"], event["type"])
