import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { load } from 'js-yaml';
import { loadConfig } from '../../src/config/app-config';
import { seedMailboxOf } from '../../src/seed/seed-mailbox';
import { classify } from '../../src/outbound-http';

/**
 * Issue 10, section 6: what Docker Compose users would lose or trip over. No Docker engine runs
 * here, so this reads the files as `docker compose` would and checks what decides the outcome:
 * the generated secrets survive a recreated container, PostgreSQL and Redis do not take the
 * host's 5432/6379 unless asked, and the app restarts.
 */
const ROOT = resolve(__dirname, '../..');

interface ComposeService {
  image?: string;
  profiles?: string[];
  build?: unknown;
  restart?: string;
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
  networks?: string[];
  command?: string[];
}
interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  networks?: Record<string, { ipam?: { config?: Array<{ subnet?: string }> } }>;
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

  it('publishes no PostgreSQL or Redis port on the host, and the app and the mail server only on 127.0.0.1', () => {
    expect(file.services.postgres.ports).toBeUndefined();
    expect(file.services.redis.ports).toBeUndefined();
    for (const port of [...(file.services.app.ports ?? []), ...(file.services.greenmail.ports ?? [])]) expect(port).toMatch(/^127\.0\.0\.1:/);
    expect(file.services.greenmail.ports).toEqual(['127.0.0.1:${GREENMAIL_SMTP_HOST_PORT:-3025}:3025', '127.0.0.1:${GREENMAIL_IMAP_HOST_PORT:-3143}:3143']);
  });

  describe('the development mail server (docs/mailboxes.md, "Development mail server")', () => {
    const greenmail = file.services.greenmail;
    const app = file.services.app.environment ?? {};
    const opts = (greenmail.environment?.GREENMAIL_OPTS ?? '').split(/\s+/);

    it('is GreenMail at a pinned version, speaking SMTP on 3025 and IMAP on 3143 to the Compose network', () => {
      expect(greenmail.image).toMatch(/^greenmail\/standalone:\d+\.\d+\.\d+$/);
      expect(opts).toEqual(expect.arrayContaining(['-Dgreenmail.setup.test.smtp', '-Dgreenmail.setup.test.imap', '-Dgreenmail.hostname=0.0.0.0']));
    });

    it("has the seed's email line as a user whose login is the seed's: the whole address and SEED_MAILBOX_PASSWORD", () => {
      const mailbox = seedMailboxOf(app);
      expect(mailbox).toEqual({ imap: { host: 'greenmail', port: 3143 }, smtp: { host: 'greenmail', port: 3025 }, tls: 'none', password: expect.any(String) });
      // GreenMail's users are login:password@domain; greenmail.users.login=email makes the login the whole address.
      expect(opts).toContain(`-Dgreenmail.users=inbox:${mailbox!.password}@demo.example`);
      expect(opts).toContain('-Dgreenmail.users.login=email');
      expect(opts).not.toContain('-Dgreenmail.auth.disabled');
    });

    it('is reachable by the app, in plain text, on its own network and nowhere else private', () => {
      expect(greenmail.networks).toEqual(['devmail']);
      expect(file.services.app.networks).toEqual(expect.arrayContaining(['default', 'devmail']));
      // One variable sets both, so the allowlist cannot drift from the network (see the comment there).
      const setting = file.networks?.devmail.ipam?.config?.[0]?.subnet;
      expect(setting).toBe('${GREENMAIL_SUBNET:-10.213.53.0/28}');
      expect(app.MAIL_ALLOWED_CIDRS).toBe(setting);
      const subnet = setting!.replace(/\$\{\w+:-([^}]*)\}/g, '$1');
      // The app's configuration as Compose sets it (`${VAR:-}` unset), with the secrets development would generate.
      const environment = Object.fromEntries(Object.entries(app).map(([name, value]) => [name, value.replace(/\$\{\w+:-([^}]*)\}/g, '$1')]));
      const { ADMIN_TOKEN, INGEST_TOKEN, SECRETS_KEY } = process.env;
      const config = loadConfig({ ...environment, ADMIN_TOKEN, INGEST_TOKEN, SECRETS_KEY });
      expect(config.mail.allowPlaintext).toBe(true);
      const [network] = subnet!.split('/');
      const greenmailAddress = network.replace(/\.0$/, '.2'); // the first address Docker hands out after the gateway's
      expect(classify(greenmailAddress, config.mail.allowedCidrs).allowed).toBe(true);
      expect(classify('172.17.0.2', config.mail.allowedCidrs).allowed).toBe(false);
      expect(classify('127.0.0.1', config.mail.allowedCidrs).allowed).toBe(false);
    });
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

describe('docker-compose.yml, profile observability', () => {
  const file = compose('docker-compose.yml');
  const prometheus = load(readFileSync(resolve(ROOT, 'deploy/prometheus/prometheus.yml'), 'utf8')) as {
    scrape_configs: Array<{ metrics_path: string; static_configs: Array<{ targets: string[] }> }>;
  };

  it('starts Prometheus, Grafana and Jaeger only when asked, on loopback host ports, with the files in deploy/', () => {
    for (const name of ['prometheus', 'grafana', 'jaeger']) {
      expect(file.services[name].profiles).toEqual(['observability']);
      for (const port of file.services[name].ports ?? []) expect(port).toMatch(/^127\.0\.0\.1:/);
    }
    for (const name of ['postgres', 'redis', 'app']) expect(file.services[name].profiles).toBeUndefined();
    expect(file.services.prometheus.volumes).toContain('./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    expect(file.services.grafana.volumes).toEqual(
      expect.arrayContaining(['./deploy/grafana/provisioning:/etc/grafana/provisioning:ro', './deploy/grafana/dashboards:/var/lib/grafana/dashboards:ro']),
    );
  });

  it('leaves tracing off unless OTEL_EXPORTER_OTLP_ENDPOINT is given, and then takes it as the app reads it', () => {
    const passed = file.services.app.environment!.OTEL_EXPORTER_OTLP_ENDPOINT;
    expect(passed).toBe('${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
    const base = {
      DATABASE_URL: 'postgres://postgres@postgres:5432/x',
      REDIS_URL: 'redis://redis:6379',
      APP_ENV: 'development',
      ADMIN_TOKEN: 'a'.repeat(20),
      INGEST_TOKEN: 'b'.repeat(20),
      SECRETS_KEY: 'c'.repeat(64),
    };
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: '' }).tracing.enabled).toBe(false);
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' }).tracing.enabled).toBe(true);
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318', OTEL_SDK_DISABLED: 'true' }).tracing.enabled).toBe(false);
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'jaeger:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/);
  });

  it("scrapes the app's /metrics on its Compose address and port", () => {
    const [job] = prometheus.scrape_configs;
    expect(job.metrics_path).toBe('/metrics');
    expect(job.static_configs[0].targets).toEqual([`app:${file.services.app.environment!.PORT}`]);
    const datasource = load(readFileSync(resolve(ROOT, 'deploy/grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as {
      datasources: Array<{ uid: string; url: string }>;
    };
    expect(datasource.datasources[0]).toMatchObject({ uid: 'prometheus', url: 'http://prometheus:9090' });
    const dashboard = JSON.parse(readFileSync(resolve(ROOT, 'deploy/grafana/dashboards/messaging-sync.json'), 'utf8')) as {
      panels: Array<{ datasource: { uid: string } }>;
    };
    expect(new Set(dashboard.panels.map((p) => p.datasource.uid))).toEqual(new Set(['prometheus']));
  });
});

describe('deploy/compose.replicas.yml (docs/production.md)', () => {
  /** YAML merge keys (`<<: *anchor`) resolved as Compose resolves them: this js-yaml leaves them as keys. */
  const merged = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(merged);
    if (!value || typeof value !== 'object') return value;
    const { '<<': base, ...own } = value as Record<string, unknown>;
    return Object.fromEntries(Object.entries({ ...(merged(base) as object), ...own }).map(([k, v]) => [k, merged(v)]));
  };
  const file = merged(load(readFileSync(resolve(ROOT, 'deploy/compose.replicas.yml'), 'utf8'))) as ComposeFile & {
    services: Record<string, ComposeService & { deploy?: { replicas?: number } }>;
  };
  const caddyfile = readFileSync(resolve(ROOT, 'deploy/caddy/Caddyfile'), 'utf8');
  /** A replica's environment as Compose gives it, with the required secrets set. */
  const environmentOf = (name: string) => {
    const secrets: Record<string, string> = { ADMIN_TOKEN: 'a'.repeat(48), INGEST_TOKEN: 'b'.repeat(48), SECRETS_KEY: 'c'.repeat(64) };
    return Object.fromEntries(
      Object.entries(file.services[name].environment ?? {}).map(([key, value]) => [
        key,
        value.replace(/\$\{(\w+)(?::[-?][^}]*)?\}/g, (_, variable: string) => secrets[variable] ?? value.match(/:-([^}]*)\}/)?.[1] ?? ''),
      ]),
    );
  };

  it('runs two api and two worker replicas of one build, each with its role', () => {
    expect(file.services.api.deploy?.replicas).toBe(2);
    expect(file.services.worker.deploy?.replicas).toBe(2);
    expect(file.services.api.build).toBe('..');
    expect(file.services.worker.build).toBe('..');
    expect(loadConfig(environmentOf('api'))).toMatchObject({ processRole: 'api', port: 3000 });
    expect(loadConfig(environmentOf('worker'))).toMatchObject({ processRole: 'worker' });
  });

  it("probes each replica's readiness where it serves it: the api on its port, a worker on METRICS_PORT", () => {
    const probe = (name: string) => (file.services[name] as { healthcheck?: { test: string[] } }).healthcheck?.test.join(' ') ?? '';
    expect(probe('api')).toContain(`http://127.0.0.1:${loadConfig(environmentOf('api')).port}/ready`);
    expect(probe('worker')).toContain(`http://127.0.0.1:${file.services.worker.environment?.METRICS_PORT}/ready`);
  });

  it('requires the shared secrets rather than generating a key per replica, and gives every replica the same ones', () => {
    for (const name of ['api', 'worker']) {
      const environment = file.services[name].environment ?? {};
      expect(environment.APP_ENV).toBe('production');
      for (const secret of ['ADMIN_TOKEN', 'INGEST_TOKEN', 'SECRETS_KEY']) expect(environment[secret]).toMatch(new RegExp(`^\\$\\{${secret}:\\?`));
    }
    expect(file.services.api.environment?.SECRETS_KEY).toBe(file.services.worker.environment?.SECRETS_KEY);
  });

  it('publishes one port, the proxy, on 127.0.0.1; the api trusts that one hop; Caddy spreads requests over the api replicas unbuffered', () => {
    for (const [name, service] of Object.entries(file.services)) if (name !== 'proxy') expect([name, service.ports]).toEqual([name, undefined]);
    expect(file.services.proxy.ports).toEqual(['127.0.0.1:${HOST_PORT:-3000}:3000']);
    expect(file.services.proxy.volumes).toEqual(['./caddy/Caddyfile:/etc/caddy/Caddyfile:ro']);
    expect(loadConfig(environmentOf('api')).trustProxy).toBe(1);
    expect(caddyfile).toMatch(/dynamic a \{\s*name api\s*port 3000/);
    expect(caddyfile).toMatch(/flush_interval -1/);
  });

  it('keeps Redis from evicting queue keys and PostgreSQL on a volume; restarts every service', () => {
    expect(file.services.redis.command).toEqual(expect.arrayContaining(['--maxmemory-policy', 'noeviction', '--appendonly', 'yes']));
    expect(Object.keys(file.volumes ?? {})).toEqual(expect.arrayContaining(['postgres-data', 'redis-data']));
    for (const [name, service] of Object.entries(file.services)) expect([name, service.restart]).toEqual([name, 'unless-stopped']);
  });
});
