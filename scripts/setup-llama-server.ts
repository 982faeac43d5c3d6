/**
 * Builds `llama-server` from the llama.cpp git bundle shipped inside `node-llama-cpp`, so tests
 * can run against a real server without any download. Run with `npm run setup:llama-server`.
 *
 * Idempotent: a stamp file records the bundle hash and CMake flags of the last successful build;
 * when both match and the binary exists, nothing is rebuilt. `LLAMA_SERVER_PATH` skips the build.
 * A lock folder serialises concurrent runs (parallel test workers on a fresh clone).
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, existsSync } from "node:fs";
import { copyFile, mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { execa } from "execa";
import { isExecutable } from "../src/server/executables.ts";
import {
  cachedLlamaServerPath,
  LLAMA_SERVER_PATH_ENV,
  llamaServerCacheDir,
} from "../src/server/llama-server-path.ts";

/**
 * CMake cache entries for a CPU-only, static, offline build of the server alone.
 * `GGML_NATIVE` keeps its default (ON): the binary is built on the machine that runs it.
 */
export const LLAMA_SERVER_CMAKE_FLAGS: readonly string[] = [
  "-DCMAKE_BUILD_TYPE=Release",
  "-DBUILD_SHARED_LIBS=OFF",
  "-DLLAMA_BUILD_TESTS=OFF",
  "-DLLAMA_BUILD_EXAMPLES=OFF",
  "-DLLAMA_BUILD_SERVER=ON",
  // Would download the web UI from a Hugging Face bucket at configure time.
  "-DLLAMA_USE_PREBUILT_UI=OFF",
  "-DLLAMA_BUILD_UI=OFF",
  // Only needed to fetch models over HTTPS; avoids requiring libssl-dev.
  "-DLLAMA_OPENSSL=OFF",
];

/** Receives one human-readable progress line. */
export type ProgressLog = (line: string) => void;

/** Options of {@link setupLlamaServer}. */
export interface SetupLlamaServerOptions {
  /** Parallel compile jobs; defaults to `$LLAMA_SERVER_BUILD_JOBS` or 2. */
  jobs?: number;
  /** Receives each progress line; defaults to `console.log` with a prefix. */
  log?: ProgressLog;
}

interface BuildStamp {
  bundleSha256: string;
  cmakeFlags: string[];
  version: string;
  builtAt: string;
}

/** Thrown when the build cannot start or a build step fails. */
export class LlamaServerSetupError extends Error {
  override name = "LlamaServerSetupError";
}

const defaultLog: ProgressLog = (line) => console.log(`[setup-llama-server] ${line}`);

/** Absolute path of the llama.cpp git bundle that `node-llama-cpp` ships. */
export function llamaCppBundlePath(): string {
  // Resolves to <package>/dist/index.js.
  const entry = createRequire(import.meta.url).resolve("node-llama-cpp");
  return join(dirname(dirname(entry)), "llama", "gitRelease.bundle");
}

/**
 * Ensures a built `llama-server` exists and returns its absolute path, building it from the
 * bundled llama.cpp source when the cache is missing or stale (5 to 20 minutes on 2 cores; no
 * step has a time limit).
 *
 * @throws {LlamaServerSetupError} when build tools are missing or a build step fails.
 */
export async function setupLlamaServer(options: SetupLlamaServerOptions = {}): Promise<string> {
  const log = options.log ?? defaultLog;
  const jobs = options.jobs ?? (Number(process.env.LLAMA_SERVER_BUILD_JOBS) || 2);

  const override = process.env[LLAMA_SERVER_PATH_ENV];
  if (override) {
    if (!isExecutable(override)) {
      throw new LlamaServerSetupError(`${LLAMA_SERVER_PATH_ENV}=${override} is not an executable file.`);
    }
    log(`using ${LLAMA_SERVER_PATH_ENV}: ${override}`);
    return override;
  }

  const cacheDir = llamaServerCacheDir();
  const binaryPath = cachedLlamaServerPath();
  const stampPath = join(cacheDir, "stamp.json");
  const bundleSha256 = await hashFile(requireBundle());
  const cmakeFlags = [...LLAMA_SERVER_CMAKE_FLAGS];
  const findUpToDateStamp = async (): Promise<BuildStamp | undefined> => {
    const stamp = await readStamp(stampPath);
    const upToDate =
      stamp !== undefined &&
      isExecutable(binaryPath) &&
      stamp.bundleSha256 === bundleSha256 &&
      JSON.stringify(stamp.cmakeFlags) === JSON.stringify(cmakeFlags);
    return upToDate ? stamp : undefined;
  };

  const existing = await findUpToDateStamp();
  if (existing) {
    log(`up to date (${existing.version}): ${binaryPath}`);
    return binaryPath;
  }

  await assertToolsInstalled(["git", "cmake", "c++"]);
  return withDirectoryLock(join(cacheDir, ".lock"), log, async () => {
    // Another process may have finished the build while this one waited for the lock.
    const built = await findUpToDateStamp();
    if (built) {
      log(`up to date (${built.version}): ${binaryPath}`);
      return binaryPath;
    }
    const buildDir = join(cacheDir, "build");
    const logPath = join(cacheDir, "build.log");
    await rm(stampPath, { force: true });
    const sourceDir = await cloneSourceIfStale(log);

    const started = Date.now();
    log(`configuring with CMake (log: ${logPath})`);
    await runLogged("cmake", ["-S", sourceDir, "-B", buildDir, ...cmakeFlags], logPath);
    log(`configured in ${elapsed(started)}; building target llama-server with ${jobs} jobs`);

    // A line every 10% and at least once a minute: a busy 2-core machine takes up to ~20 minutes.
    let lastReported = -10;
    let lastReportedAt = Date.now();
    await runLogged(
      "cmake",
      ["--build", buildDir, "--config", "Release", "--target", "llama-server", "--parallel", String(jobs)],
      logPath,
      (line) => {
        const percent = Number(/^\[\s*(\d+)%\]/.exec(line)?.[1] ?? Number.NaN);
        if (percent >= lastReported + 10 || (percent >= 0 && Date.now() - lastReportedAt >= 60_000)) {
          lastReported = percent;
          lastReportedAt = Date.now();
          log(`building ${percent}% (${elapsed(started)})`);
        }
      },
    );

    // Copy then rename: replacing a binary that a running server uses fails with ETXTBSY.
    await mkdir(dirname(binaryPath), { recursive: true });
    await copyFile(join(buildDir, "bin", "llama-server"), `${binaryPath}.partial`);
    await rename(`${binaryPath}.partial`, binaryPath);
    const version = await readVersion(binaryPath);
    const stamp: BuildStamp = { bundleSha256, cmakeFlags, version, builtAt: new Date().toISOString() };
    await writeFile(stampPath, `${JSON.stringify(stamp, null, 2)}\n`);
    log(`built ${version} in ${elapsed(started)}: ${binaryPath}`);
    return binaryPath;
  });
}

/**
 * Ensures `<cache>/source` is a clone of the bundled llama.cpp commit and returns its path;
 * the test-model generator needs its `gguf-py` package even when no server is built.
 */
export async function ensureLlamaCppSource(options: { log?: ProgressLog } = {}): Promise<string> {
  const log = options.log ?? defaultLog;
  await assertToolsInstalled(["git"]);
  return withDirectoryLock(join(llamaServerCacheDir(), ".lock"), log, () => cloneSourceIfStale(log));
}

/**
 * Throws a {@link LlamaServerSetupError} naming the missing tools when any of `tools` cannot
 * run `--version`.
 */
export async function assertToolsInstalled(tools: readonly string[]): Promise<void> {
  const missing: string[] = [];
  for (const tool of tools) {
    const result = await execa(tool, ["--version"], { reject: false });
    if (result.failed) missing.push(tool);
  }
  if (missing.length > 0) {
    throw new LlamaServerSetupError(
      `missing build tools: ${missing.join(", ")}. Install them with ` +
        "`apt-get update && apt-get install -y cmake g++ make git` (`npm test` does when run as root).",
    );
  }
}

/**
 * Runs `action` while holding a lock folder at `lockPath`, waiting for other holders; a lock
 * left behind by a dead process is taken over.
 */
export async function withDirectoryLock<T>(
  lockPath: string,
  log: ProgressLog,
  action: () => Promise<T>,
): Promise<T> {
  await mkdir(dirname(lockPath), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      await mkdir(lockPath);
      await writeFile(join(lockPath, "pid"), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (await isAbandoned(lockPath)) {
        await rm(lockPath, { recursive: true, force: true });
        continue;
      }
      if (!announced) {
        log(`waiting for another setup run holding ${lockPath}`);
        announced = true;
      }
      await sleep(1000);
    }
  }
  try {
    return await action();
  } finally {
    await rm(lockPath, { recursive: true, force: true });
  }
}

async function isAbandoned(lockPath: string): Promise<boolean> {
  const owner = Number(await readFile(join(lockPath, "pid"), "utf8").catch(() => ""));
  if (!owner) {
    // The owner may be between mkdir and writing its pid; only a minute-old lock is abandoned.
    const created = await stat(lockPath).catch(() => undefined);
    return created !== undefined && Date.now() - created.mtimeMs > 60_000;
  }
  try {
    process.kill(owner, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

function requireBundle(): string {
  const bundlePath = llamaCppBundlePath();
  if (!existsSync(bundlePath)) {
    throw new LlamaServerSetupError(`llama.cpp bundle not found at ${bundlePath}; run \`npm ci\` first.`);
  }
  return bundlePath;
}

/** Clones the bundle into `<cache>/source` unless it already holds the bundle's commit. */
async function cloneSourceIfStale(log: ProgressLog): Promise<string> {
  const cacheDir = llamaServerCacheDir();
  const sourceDir = join(cacheDir, "source");
  const bundlePath = requireBundle();
  const bundleHead = await readBundleHead(bundlePath);
  if (await isCloneOf(sourceDir, bundleHead)) return sourceDir;

  await rm(sourceDir, { recursive: true, force: true });
  await rm(join(cacheDir, "build"), { recursive: true, force: true });
  log(`cloning ${bundlePath} -> ${sourceDir}`);
  await runLogged("git", ["clone", "--quiet", bundlePath, sourceDir], join(cacheDir, "build.log"));
  return sourceDir;
}

async function hashFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

async function readStamp(path: string): Promise<BuildStamp | undefined> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as BuildStamp;
  } catch {
    return undefined;
  }
}

async function readBundleHead(bundlePath: string): Promise<string> {
  const { stdout } = await execa("git", ["bundle", "list-heads", bundlePath]);
  const lines = stdout.split("\n");
  const head = lines.find((line) => line.endsWith(" HEAD")) ?? lines[0] ?? "";
  return head.split(" ")[0] ?? "";
}

async function isCloneOf(sourceDir: string, commit: string): Promise<boolean> {
  if (!commit || !existsSync(join(sourceDir, "CMakeLists.txt"))) return false;
  const result = await execa("git", ["-C", sourceDir, "rev-parse", "HEAD"], { reject: false });
  return !result.failed && result.stdout.trim() === commit;
}

async function readVersion(binaryPath: string): Promise<string> {
  const result = await execa(binaryPath, ["--version"], { all: true, reject: false });
  if (result.failed) {
    throw new LlamaServerSetupError(`${binaryPath} --version failed:\n${result.all ?? ""}`);
  }
  // Prints e.g. "version: 1 (de3ff81)\nbuilt with GNU 12.2.0 for Linux x86_64".
  return /version: (.*)/.exec(result.all ?? "")?.[1] ?? "unknown version";
}

/** Runs a command, appending its output to `logPath`; on failure throws with the output's tail. */
async function runLogged(
  command: string,
  args: string[],
  logPath: string,
  onLine?: (line: string) => void,
): Promise<void> {
  await mkdir(dirname(logPath), { recursive: true });
  const logStream = createWriteStream(logPath, { flags: "a" });
  logStream.write(`\n$ ${command} ${args.join(" ")}\n`);
  const tail: string[] = [];
  const subprocess = execa(command, args, { all: true, reject: false, buffer: false });
  for await (const line of subprocess.iterable({ from: "all" })) {
    logStream.write(`${line}\n`);
    tail.push(line);
    if (tail.length > 40) tail.shift();
    onLine?.(line);
  }
  const result = await subprocess;
  await new Promise<void>((resolve) => logStream.end(resolve));
  if (result.failed) {
    throw new LlamaServerSetupError(
      `\`${command} ${args.join(" ")}\` failed (exit ${result.exitCode}). Last output:\n${tail.join("\n")}\n` +
        `Full log: ${logPath}`,
    );
  }
}

function elapsed(since: number): string {
  const seconds = Math.round((Date.now() - since) / 1000);
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  setupLlamaServer().catch((error: unknown) => {
    console.error(`[setup-llama-server] ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
