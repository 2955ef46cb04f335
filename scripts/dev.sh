#!/usr/bin/env bash
# Local development start (`npm run dev`, after `npm ci`):
#   1. reads .env if present (variables already set in the environment win);
#   2. defaults APP_ENV=development, DATABASE_URL=.../messaging_dev, REDIS_URL=redis://127.0.0.1:6379;
#   3. makes sure PostgreSQL and Redis answer (local services, or docker compose when no local
#      server is installed) and creates the database if missing;
#   4. builds, seeds an empty database (prints a demo API key once), prints a sign-in link for the
#      demo owner (web app), says where the admin token is, and runs the service in the foreground.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "dev: $*"; }

# --- .env (KEY=VALUE lines; # comments; optional `export` and quotes) ---------------------------
if [ -f .env ]; then
  say "reading .env"
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line%$'\r'}"
    [[ "$line" =~ ^[[:space:]]*(export[[:space:]]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
    key="${BASH_REMATCH[2]}"
    value="${BASH_REMATCH[3]}"
    if [[ "$value" =~ ^\"(.*)\"[[:space:]]*$ || "$value" =~ ^\'(.*)\'[[:space:]]*$ ]]; then
      value="${BASH_REMATCH[1]}"
    else
      value="${value%%[[:space:]]#*}"                 # trailing comment
      value="${value%"${value##*[![:space:]]}"}"      # trailing spaces
    fi
    [ -n "${!key+x}" ] || export "$key=$value"
  done < .env
fi

export APP_ENV="${APP_ENV:-development}"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/messaging_dev}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
port="${PORT:-3000}"
# Links the service prints (sign-in, attachments, pixels) point at this port unless told otherwise,
# on 127.0.0.1 as every development address here: the session cookie belongs to one host.
export PUBLIC_BASE_URL="${PUBLIC_BASE_URL:-http://127.0.0.1:$port}"

# --- PostgreSQL and Redis (and the database) ---------------------------------------------------
bash scripts/ensure-services.sh --docker-fallback --postgres-url "$DATABASE_URL" --redis-url "$REDIS_URL"

# --- build, seed, run --------------------------------------------------------------------------
say "building (npm run build)"
npm run build --silent

say "seeding (npm run seed): only an empty database is seeded"
npm run seed --silent

# A one-time link (15 minutes) that signs the demo owner in to the web app (docs/web.md).
if link="$(node dist/src/web/sign-in-link-cli.js owner@demo.example 2>&1)"; then
  say "web app: sign in as owner@demo.example within 15 minutes with"
  say "  $link"
  say "  (later: ask for a link at $PUBLIC_BASE_URL/sign-in; without SMTP_URL it is written to this log)"
else
  say "web app: no sign-in link printed ($link)"
fi

# Where each token is: the value you set, or the generated development file (never printed here).
secrets="${DEV_SECRETS_FILE:-.dev/secrets.json}"
tell_token() { # <name> <VARIABLE> <field in the secrets file> <used for>
  if [ -n "${!2:-}" ]; then
    say "$1 ($4): the $2 you set (environment or .env)"
  elif [ "$APP_ENV" = development ]; then
    say "$1 ($4): in $secrets (generated once, git-ignored); read it with"
    say "  node -p \"JSON.parse(require('fs').readFileSync('$secrets', 'utf8')).$3\""
  fi
}
tell_token "admin token" ADMIN_TOKEN adminToken "the /admin API"
tell_token "ingest token" INGEST_TOKEN ingestToken "the /ingest provider routes"
if [ "$APP_ENV" = development ] && [ -z "${WEBHOOK_ALLOWED_CIDRS:-}" ]; then
  say "webhooks to loopback receivers (http://127.0.0.1:<port>/...) are allowed in development"
fi

say "MCP endpoint: $PUBLIC_BASE_URL/api/mcp"
say "  with the seed's API key (Authorization: Bearer csk_...), or as an OAuth client: an MCP host that"
say "  connects by OAuth (docs/mcp.md, \"Connecting Claude, ChatGPT and other OAuth clients\") signs you in here"
say "starting the service on http://127.0.0.1:$port (health: /health, ready: /ready, admin API docs: /admin/docs)"
exec npm start --silent
