#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer, starting them if they are local and down, and creates
# the databases asked for. Exits non-zero with a clear message when a service cannot be had.
#
# Usage: scripts/ensure-services.sh [--postgres-url URL] [--redis-url URL] [--create-db NAME]...
#                                   [--docker-fallback]
#
#   --postgres-url URL   the PostgreSQL to check; its database is created when missing (default:
#                        $TEST_DATABASE_URL, else postgres://postgres@$PGHOST:$PGPORT/test, the
#                        test suite's base database, with PGHOST=127.0.0.1 and PGPORT=5432)
#   --redis-url URL      the Redis to check (default: $TEST_REDIS_URL, else
#                        redis://$REDIS_HOST:$REDIS_PORT, with 127.0.0.1 and 6379)
#   --create-db NAME     one more database to create when missing (repeatable)
#   --docker-fallback    when a local server is not installed but a Docker engine works, start it
#                        with `docker compose -f docker-compose.yml -f docker-compose.host-ports.yml
#                        up -d postgres|redis`, published on the port of the URL being checked
#
# Environment: PGHOST/PGPORT and REDIS_HOST/REDIS_PORT change the default addresses (for example
# PGPORT=5499 to see the failure path); SERVICES_WAIT_SECONDS (default 30) is how long to wait for
# each service to answer after starting it.
#
# Local services are started with the commands this machine's image documents:
#   pg_ctlcluster --skip-systemctl-redirect <version> main start
#   redis-server --daemonize yes --bind 127.0.0.1 --port <port> --save "" --appendonly no
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

postgres_url="${TEST_DATABASE_URL:-postgres://postgres@${PGHOST:-127.0.0.1}:${PGPORT:-5432}/test}"
redis_url="${TEST_REDIS_URL:-redis://${REDIS_HOST:-127.0.0.1}:${REDIS_PORT:-6379}}"
docker_fallback=0
extra_dbs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --postgres-url) postgres_url="$2"; shift 2 ;;
    --redis-url) redis_url="$2"; shift 2 ;;
    --create-db) extra_dbs+=("$2"); shift 2 ;;
    --docker-fallback) docker_fallback=1; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "ensure-services: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

wait_seconds="${SERVICES_WAIT_SECONDS:-30}"

log() { echo "ensure-services: $*" >&2; }
fail() {
  echo >&2
  echo "ensure-services: ERROR: $*" >&2
  echo >&2
  exit 1
}

# postgres://[user[:password]@]host[:port][/database][?query]
if [[ "$postgres_url" =~ ^postgres(ql)?://(([^:@/]+)(:([^@/]*))?@)?([^:/?]+)(:([0-9]+))?(/([^?]*))? ]]; then
  pg_user="${BASH_REMATCH[3]:-postgres}"
  pg_password="${BASH_REMATCH[5]:-}"
  pg_host="${BASH_REMATCH[6]}"
  pg_port="${BASH_REMATCH[8]:-5432}"
  pg_db="${BASH_REMATCH[10]:-}"
else
  fail "cannot read the PostgreSQL URL '$postgres_url' (expected postgres://user@host:port/database)"
fi
# redis://[user:password@]host[:port][/db]
if [[ "$redis_url" =~ ^rediss?://([^@/]*@)?([^:/?]+)(:([0-9]+))? ]]; then
  redis_host="${BASH_REMATCH[2]}"
  redis_port="${BASH_REMATCH[4]:-6379}"
else
  fail "cannot read the Redis URL '$redis_url' (expected redis://host:port)"
fi

is_local() { case "$1" in 127.0.0.1|localhost|::1) return 0 ;; *) return 1 ;; esac; }
have() { command -v "$1" >/dev/null 2>&1; }

compose=()
docker_usable() {
  [ "$docker_fallback" = 1 ] || return 1
  if [ ${#compose[@]} -eq 0 ]; then
    have docker || return 1
    docker info >/dev/null 2>&1 || return 1
    if docker compose version >/dev/null 2>&1; then compose=(docker compose)
    elif have docker-compose; then compose=(docker-compose)
    else return 1
    fi
    # docker-compose.yml keeps PostgreSQL and Redis off the host; the override publishes them.
    compose+=(-f docker-compose.yml -f docker-compose.host-ports.yml)
  fi
  return 0
}
# True when this service runs under our docker-compose.yml (so its tools are reached through it).
in_compose() { docker_usable && [ -n "$("${compose[@]}" ps -q "$1" 2>/dev/null)" ]; }

pg_ready() {
  if have pg_isready; then
    pg_isready -q -h "$pg_host" -p "$pg_port" -t 2 >/dev/null 2>&1
  elif in_compose postgres; then
    "${compose[@]}" exec -T postgres pg_isready -q -U postgres >/dev/null 2>&1
  else
    (exec 3<>"/dev/tcp/$pg_host/$pg_port") >/dev/null 2>&1
  fi
}

redis_ready() {
  if have redis-cli; then
    [ "$(redis-cli -h "$redis_host" -p "$redis_port" ping 2>/dev/null)" = PONG ]
  elif in_compose redis; then
    [ "$("${compose[@]}" exec -T redis redis-cli ping 2>/dev/null | tr -d '\r')" = PONG ]
  else
    local reply
    reply=$(timeout 3 bash -c "exec 3<>/dev/tcp/$redis_host/$redis_port && printf 'PING\r\n' >&3 && head -c 5 <&3" 2>/dev/null) || return 1
    [ "$reply" = "+PONG" ]
  fi
}

wait_for() { # name check-function
  local name="$1" check="$2" waited=0
  while ! "$check"; do
    if [ "$waited" -ge "$wait_seconds" ]; then return 1; fi
    sleep 1
    waited=$((waited + 1))
  done
  return 0
}

tried=""
no_docker_note() {
  if [ "$docker_fallback" = 1 ]; then echo ", and no working Docker engine with compose was found"; fi
}
start_postgres() {
  if is_local "$pg_host" && have pg_ctlcluster && [ -d /etc/postgresql ]; then
    local version
    for version in $(ls /etc/postgresql); do
      log "starting local PostgreSQL $version: pg_ctlcluster --skip-systemctl-redirect $version main start"
      tried="pg_ctlcluster --skip-systemctl-redirect $version main start"
      pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || log "(pg_ctlcluster exited with $?)"
    done
  elif is_local "$pg_host" && docker_usable; then
    log "no local PostgreSQL server installed; starting it with: ${compose[*]} up -d postgres"
    tried="${compose[*]} up -d postgres"
    POSTGRES_HOST_PORT="$pg_port" "${compose[@]}" up -d postgres >&2 || log "(${compose[*]} up exited with $?)"
  elif is_local "$pg_host"; then
    tried="nothing: no local PostgreSQL server (pg_ctlcluster) is installed$(no_docker_note)"
  else
    tried="nothing: $pg_host is not 127.0.0.1 or localhost, so it is not started from here"
  fi
}

start_redis() {
  if is_local "$redis_host" && have redis-server; then
    log "starting local Redis: redis-server --daemonize yes --bind 127.0.0.1 --port $redis_port --save \"\" --appendonly no"
    tried="redis-server --daemonize yes --bind 127.0.0.1 --port $redis_port --save \"\" --appendonly no"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no >&2 \
      || log "(redis-server exited with $?)"
  elif is_local "$redis_host" && docker_usable; then
    log "no local Redis server installed; starting it with: ${compose[*]} up -d redis"
    tried="${compose[*]} up -d redis"
    REDIS_HOST_PORT="$redis_port" "${compose[@]}" up -d redis >&2 || log "(${compose[*]} up exited with $?)"
  elif is_local "$redis_host"; then
    tried="nothing: no local Redis server (redis-server) is installed$(no_docker_note)"
  else
    tried="nothing: $redis_host is not 127.0.0.1 or localhost, so it is not started from here"
  fi
}

# --- PostgreSQL --------------------------------------------------------------------------------
if pg_ready; then
  log "PostgreSQL answers at $pg_host:$pg_port"
else
  log "PostgreSQL does not answer at $pg_host:$pg_port"
  start_postgres
  wait_for PostgreSQL pg_ready || fail "PostgreSQL is not answering at $pg_host:$pg_port after ${wait_seconds} s.
  Tried: $tried
  Start PostgreSQL 15+ yourself (or run: docker compose -f docker-compose.yml -f docker-compose.host-ports.yml up -d postgres redis) and try again."
  log "PostgreSQL answers at $pg_host:$pg_port"
fi

# --- Redis -------------------------------------------------------------------------------------
if redis_ready; then
  log "Redis answers at $redis_host:$redis_port"
else
  log "Redis does not answer at $redis_host:$redis_port"
  start_redis
  wait_for Redis redis_ready || fail "Redis is not answering at $redis_host:$redis_port after ${wait_seconds} s.
  Tried: $tried
  Start Redis 7 yourself (or run: docker compose -f docker-compose.yml -f docker-compose.host-ports.yml up -d postgres redis) and try again."
  log "Redis answers at $redis_host:$redis_port"
fi

# --- Databases ---------------------------------------------------------------------------------
psql_run() { # sql against the maintenance database
  if have psql; then
    PGPASSWORD="$pg_password" PGCONNECT_TIMEOUT=5 psql -X -q -v ON_ERROR_STOP=1 -h "$pg_host" -p "$pg_port" -U "$pg_user" -d postgres -Atc "$1"
  elif in_compose postgres; then
    "${compose[@]}" exec -T postgres psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -Atc "$1"
  else
    return 127
  fi
}

for db in ${pg_db:+"$pg_db"} ${extra_dbs[@]+"${extra_dbs[@]}"}; do
  [[ "$db" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || fail "refusing to create database '$db': use letters, digits and _ only"
  status=0
  exists=$(psql_run "SELECT 1 FROM pg_database WHERE datname = '$db'") || status=$?
  if [ "$status" = 127 ]; then
    log "warning: no psql client (and no compose PostgreSQL) to check that database '$db' exists"
    continue
  elif [ "$status" != 0 ]; then
    fail "could not query PostgreSQL at $pg_host:$pg_port as '$pg_user' (see the psql error above)"
  fi
  if [ "$exists" != 1 ]; then
    log "creating database $db"
    psql_run "CREATE DATABASE \"$db\"" || fail "could not create database '$db' at $pg_host:$pg_port"
  fi
done
