// docker-compose.yml, checked without Docker: the file parses (merge keys resolved, as Compose
// does), and both the default stack and `--profile replica` are whole, with every reference
// (depends_on, volumes, configs) naming something declared and active under that profile, as
// `docker compose config` requires. The replica profile's server reads the standby and writes
// the primary; the standby streams from the primary.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { parse } from 'yaml';

interface Service {
  image?: string;
  build?: string;
  profiles?: string[];
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
  configs?: { source: string; target: string }[];
  environment?: Record<string, string>;
  command?: string[];
  ports?: string[];
}
interface Compose { services: Record<string, Service>; volumes?: Record<string, unknown>; configs?: Record<string, { content?: string }> }

const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'docker-compose.yml');
const compose = parse(fs.readFileSync(file, 'utf8'), { merge: true }) as Compose;

/** The services `docker compose [--profile p] config` keeps: those with no profile, or one of `profiles`. */
const active = (profiles: string[]) =>
  Object.entries(compose.services).filter(([, s]) => !s.profiles || s.profiles.some((p) => profiles.includes(p)));

it.each([[[] as string[]], [['replica']]])('is whole under profiles %j: every reference names a declared, active thing', (profiles) => {
  const services = new Map(active(profiles));
  for (const [name, s] of services) {
    expect(s.image ?? s.build, `${name} has an image or a build`).toBeTruthy();
    for (const dep of Object.keys(s.depends_on ?? {})) expect(services.has(dep), `${name} depends on ${dep}, active under ${JSON.stringify(profiles)}`).toBe(true);
    for (const v of s.volumes ?? []) {
      const source = v.split(':')[0];
      if (!source.startsWith('.') && !source.startsWith('/')) expect(compose.volumes, `volume ${source} of ${name}`).toHaveProperty([source]);
    }
    for (const c of s.configs ?? []) expect(compose.configs, `config ${c.source} of ${name}`).toHaveProperty([c.source]);
    const hostPorts = (s.ports ?? []).map((p) => p.split(':').slice(0, -1).join(':'));
    for (const [other, o] of services) {
      if (other !== name) for (const p of o.ports ?? []) expect(hostPorts, `${name} and ${other} publish the same port`).not.toContain(p.split(':').slice(0, -1).join(':'));
    }
  }
});

it('keeps the default stack as it was: the replica profile only adds services', () => {
  expect(active([]).map(([n]) => n).sort()).toEqual(['postgres', 'server', 'worker']);
  expect(active(['replica']).map(([n]) => n).sort()).toEqual(['postgres', 'server', 'server-replica', 'standby', 'worker']);
});

it("points the replica server's reads at the standby and its writes at the primary, and streams the standby from the primary", () => {
  const { standby, postgres } = compose.services;
  const server = compose.services['server-replica'];
  expect(server.command).toEqual(['server']);
  expect(new URL(server.environment!.DATABASE_URL).hostname).toBe('postgres');
  expect(new URL(server.environment!.HERALD_READ_URL).hostname).toBe('standby');
  expect(server.depends_on).toMatchObject({ standby: { condition: 'service_healthy' } });
  // The standby is a copy of the primary made on first start, replaying as a hot standby.
  expect(standby.image).toBe(postgres.image);
  expect(standby.command!.join('\n')).toMatch(/pg_basebackup -h postgres .*-R/);
  expect(standby.command!.join('\n')).toContain('hot_standby=on');
  // The primary accepts the replication connection: its init script adds the pg_hba line.
  expect(compose.configs!['replication-hba'].content).toMatch(/host replication all all scram-sha-256/);
});
