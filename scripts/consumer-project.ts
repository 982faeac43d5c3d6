/**
 * The package as a user gets it: `npm pack` (which builds dist/ through `prepack`) and a fresh ESM
 * project with the tarball installed offline — the tarball plus the registry packages it needs, at
 * the versions and tarball URLs this repository's lockfile pins (npm's cache has them after the
 * repository's own install, so `npm ci --offline` makes no request). Used by
 * test/package/consumer.test.ts and `npm run bench:package`.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { execa } from "execa";

/** The repository root. */
export const repoRoot = resolve(import.meta.dirname, "..");

/** The fields of package.json these helpers read. */
export interface Manifest {
  name: string;
  version: string;
  exports: Record<string, string | { types: string; default: string }>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  [field: string]: unknown;
}

/** The repository's package.json. */
export const manifest = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as Manifest;

/** Thrown when packing or installing fails; carries npm's output. */
export class ConsumerProjectError extends Error {
  override name = "ConsumerProjectError";
}

/** `npm` quiet and without audit or funding requests. */
function npm(args: string[], cwd: string) {
  return execa("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd,
    all: true,
    reject: false,
  });
}

/** Packs the repository into `dir` (building dist/ first, through `prepack`); returns the tarball's path. */
export async function packInto(dir: string): Promise<string> {
  const pack = await npm(["pack", "--pack-destination", dir, "--json"], repoRoot);
  if (pack.exitCode !== 0) throw new ConsumerProjectError(`npm pack failed:\n${pack.all}`);
  const [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf("["))) as { filename: string }[];
  if (!packed) throw new ConsumerProjectError(`npm pack reported no file:\n${pack.all}`);
  return join(dir, packed.filename);
}

/**
 * Creates an ESM project in `dir` that depends on `tarball` (plus `extra` registry packages from the
 * repository's lockfile, by name) and installs it offline; returns the installed package's directory.
 */
export async function installConsumer(dir: string, tarball: string, extra: string[] = []): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const dependencies: Record<string, string> = { [manifest.name]: `file:${tarball}` };
  for (const name of extra) {
    const range = manifest.dependencies[name] ?? manifest.devDependencies[name];
    if (!range) throw new ConsumerProjectError(`${name} is not a dependency of this repository`);
    dependencies[name] = range;
  }
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "consumer-app", private: true, type: "module", dependencies }, null, 2),
  );
  writeFileSync(
    join(dir, "package-lock.json"),
    JSON.stringify(consumerLockfile(tarball, dependencies), null, 2),
  );
  const install = await npm(["ci", "--offline"], dir);
  if (install.exitCode !== 0) throw new ConsumerProjectError(`npm ci --offline failed:\n${install.all}`);
  return join(dir, "node_modules", manifest.name);
}

interface LockEntry {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [field: string]: unknown;
}

/** The consumer's lockfile: the tarball's entry and, copied from ours, every registry package it needs. */
function consumerLockfile(tarball: string, dependencies: Record<string, string>): object {
  const repoLock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as {
    packages: Record<string, LockEntry>;
  };
  const own = `node_modules/${manifest.name}`;
  const packages: Record<string, LockEntry> = {
    "": { name: "consumer-app", dependencies },
    [own]: {
      version: manifest.version,
      resolved: `file:${tarball}`,
      integrity: `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`,
      ...Object.fromEntries(
        ["dependencies", "peerDependencies", "peerDependenciesMeta", "bin", "engines", "license"]
          .filter((field) => manifest[field] !== undefined)
          .map((field) => [field, manifest[field]]),
      ),
    },
  };
  /** Finds `name` as Node would from the package at `fromKey`; copies its entry and what it needs. */
  const add = (fromKey: string, name: string): void => {
    for (let base = fromKey; ; base = parentOf(base)) {
      const key = `${base ? `${base}/` : ""}node_modules/${name}`;
      const entry = repoLock.packages[key];
      if (entry) {
        if (packages[key]) return;
        const { dev: _dev, devOptional: _devOptional, ...kept } = entry;
        packages[key] = kept;
        for (const dependency of Object.keys(entry.dependencies ?? {})) add(key, dependency);
        for (const peer of Object.keys(entry.peerDependencies ?? {})) {
          if (!entry.peerDependenciesMeta?.[peer]?.optional) add(key, peer);
        }
        return;
      }
      if (!base)
        throw new ConsumerProjectError(`${name} (for ${fromKey || "the app"}) is not in package-lock.json`);
    }
  };
  for (const name of Object.keys(manifest.dependencies)) add(own, name);
  for (const name of Object.keys(dependencies)) if (name !== manifest.name) add("", name);
  return { name: "consumer-app", lockfileVersion: 3, requires: true, packages };
}

/** `node_modules/a/node_modules/b` → `node_modules/a`; `node_modules/a` → the root (""). */
function parentOf(key: string): string {
  const cut = key.lastIndexOf("/node_modules/");
  return cut === -1 ? "" : key.slice(0, cut);
}
