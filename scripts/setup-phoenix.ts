/**
 * `npm run setup:phoenix`: installs Arize Phoenix (PyPI's `arize-phoenix`), the OpenTelemetry
 * backend the tracing test sends its spans to, into a venv under `.cache/phoenix/venv`. It is big
 * (about 850 MB installed, some 200 packages): on this machine the first install took 29 minutes,
 * nearly all of it downloading. A second run finds the stamp and does nothing.
 */
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execa } from "execa";

/** The Phoenix release the test runs against. */
export const PHOENIX_VERSION = "20.26.1";

/** Thrown when Phoenix cannot be installed; its message is the one line to act on. */
export class PhoenixSetupError extends Error {
  override name = "PhoenixSetupError";
}

const root = fileURLToPath(new URL("../", import.meta.url));

/** The folder Phoenix is installed in. */
export function phoenixCacheDir(): string {
  return join(root, ".cache", "phoenix");
}

/** The `phoenix` command of the venv (present once {@link setupPhoenix} has run). */
export function phoenixCommand(): string {
  return join(phoenixCacheDir(), "venv", "bin", "phoenix");
}

function stampPath(): string {
  return join(phoenixCacheDir(), `ready-${PHOENIX_VERSION}.json`);
}

/** True when the venv holds this Phoenix release. */
export function isPhoenixInstalled(): boolean {
  return existsSync(stampPath()) && existsSync(phoenixCommand());
}

/** Installs Phoenix (see the module comment) and returns its command. */
export async function setupPhoenix(
  log: (line: string) => void = (line) => console.log(`[setup-phoenix] ${line}`),
  python = process.env.FORGE_PYTHON ?? "python3",
): Promise<string> {
  if (isPhoenixInstalled()) {
    log(`arize-phoenix ${PHOENIX_VERSION} is installed (${phoenixCommand()})`);
    return phoenixCommand();
  }
  const dir = phoenixCacheDir();
  await mkdir(dir, { recursive: true });
  const venv = join(dir, "venv");
  log(`1/2 creating the venv ${venv}`);
  await run(python, ["-m", "venv", venv]);
  log(`2/2 installing arize-phoenix ${PHOENIX_VERSION} (about 850 MB; up to half an hour on a slow link)`);
  const started = performance.now();
  await run(join(venv, "bin", "python"), [
    "-m",
    "pip",
    "install",
    "-q",
    "--disable-pip-version-check",
    `arize-phoenix==${PHOENIX_VERSION}`,
  ]);
  await writeFile(stampPath(), `${JSON.stringify({ version: PHOENIX_VERSION })}\n`);
  log(`installed arize-phoenix ${PHOENIX_VERSION} in ${Math.round((performance.now() - started) / 1000)} s`);
  return phoenixCommand();
}

async function run(command: string, args: readonly string[]): Promise<void> {
  const result = await execa(command, args, { reject: false, all: true });
  if (result.failed) {
    const last = (result.all ?? "").trim().split("\n").at(-1) ?? `exit ${result.exitCode}`;
    throw new PhoenixSetupError(
      `\`${command} ${args.slice(0, 3).join(" ")} …\` failed (${last.trim()}): reach pypi.org (or set PIP_INDEX_URL) and run \`npm run setup:phoenix\` again.`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  try {
    await setupPhoenix();
  } catch (error) {
    if (!(error instanceof PhoenixSetupError)) throw error;
    console.error(`setup:phoenix: ${error.message}`);
    process.exit(1);
  }
}
