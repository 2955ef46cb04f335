import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { load } from 'js-yaml';

/**
 * Issue 10, section 6: what Docker Compose users would lose or trip over. No Docker engine runs
 * here, so this reads the files as `docker compose` would and checks what decides the outcome:
 * the generated secrets survive a recreated container, PostgreSQL and Redis do not take the
 * host's 5432/6379 unless asked, and the app restarts.
 */
const ROOT = resolve(__dirname, '..');

interface ComposeService {
  image?: string;
  build?: unknown;
  restart?: string;
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
}
interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

const compose = (name: string) => load(readFileSync(resolve(ROOT, name), 'utf8')) as ComposeFile;

describe('docker-compose.yml', () => {
  const file = compose('docker-compose.yml');

  it('keeps the generated secrets (.dev/secrets.json) on a named volume, like the database', () => {
    const mounts = file.services.app.volumes ?? [];
    const dev = mounts.find((m) => m.split(':')[1] === '/app/.dev');
    expect(dev).toBeDefined();
    const volume = dev!.split(':')[0];
    expect(Object.keys(file.volumes ?? {})).toEqual(expect.arrayContaining([volume, 'postgres-data']));
    // The image makes the folder, owned by the user the app runs as, so the new volume is writable.
    expect(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8')).toMatch(/mkdir -p \/app\/\.dev && chown node:node \/app\/\.dev/);
  });

  it('passes every secret the app would otherwise generate', () => {
    expect(Object.keys(file.services.app.environment ?? {})).toEqual(
      expect.arrayContaining(['ADMIN_TOKEN', 'INGEST_TOKEN', 'SECRETS_KEY', 'SECRETS_KEY_FALLBACKS']),
    );
  });

  it('publishes no PostgreSQL or Redis port on the host, and the app only on 127.0.0.1', () => {
    expect(file.services.postgres.ports).toBeUndefined();
    expect(file.services.redis.ports).toBeUndefined();
    for (const port of file.services.app.ports ?? []) expect(port).toMatch(/^127\.0\.0\.1:/);
  });

  it('restarts every service', () => {
    for (const [name, service] of Object.entries(file.services)) expect([name, service.restart]).toEqual([name, 'unless-stopped']);
  });
});

describe('docker-compose.host-ports.yml', () => {
  it('publishes PostgreSQL and Redis on 127.0.0.1, on ports the caller may choose', () => {
    const file = compose('docker-compose.host-ports.yml');
    expect(file.services.postgres.ports).toEqual(['127.0.0.1:${POSTGRES_HOST_PORT:-5432}:5432']);
    expect(file.services.redis.ports).toEqual(['127.0.0.1:${REDIS_HOST_PORT:-6379}:6379']);
  });

  it('is what scripts/ensure-services.sh uses when it falls back to Docker', () => {
    const script = readFileSync(resolve(ROOT, 'scripts/ensure-services.sh'), 'utf8');
    expect(script).toContain('compose+=(-f docker-compose.yml -f docker-compose.host-ports.yml)');
    expect(script).toContain('POSTGRES_HOST_PORT="$pg_port"');
    expect(script).toContain('REDIS_HOST_PORT="$redis_port"');
  });
});
