import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Environment variable that points at an existing `llama-server` binary and bypasses the cache. */
export const LLAMA_SERVER_PATH_ENV = "LLAMA_SERVER_PATH";

/** Thrown when no runnable `llama-server` binary can be found. */
export class LlamaServerNotFoundError extends Error {
  override name = "LlamaServerNotFoundError";
}

/**
 * Absolute path of the folder where `npm run setup:llama-server` keeps the llama.cpp clone,
 * the CMake build tree, the built binary and its stamp file (`<repo>/.cache/llama-server`).
 */
export function llamaServerCacheDir(): string {
  return fileURLToPath(new URL("../../.cache/llama-server/", import.meta.url)).replace(/\/$/, "");
}

/** Absolute path where the setup script installs the `llama-server` binary it builds. */
export function cachedLlamaServerPath(): string {
  return join(llamaServerCacheDir(), "bin", "llama-server");
}

/** Whether `path` exists and the current user may execute it. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns the `llama-server` binary to spawn: `$LLAMA_SERVER_PATH` when set, else the one
 * built into the cache by `npm run setup:llama-server`.
 *
 * @throws {LlamaServerNotFoundError} when the chosen path is missing or not executable.
 * @example
 * ```ts
 * const binary = resolveLlamaServerPath();
 * spawn(binary, ["--model", modelPath, "--jinja"]);
 * ```
 */
export function resolveLlamaServerPath(): string {
  const override = process.env[LLAMA_SERVER_PATH_ENV];
  if (override) {
    if (!isExecutable(override)) {
      throw new LlamaServerNotFoundError(
        `${LLAMA_SERVER_PATH_ENV}=${override} is not an executable file; unset it to use the cached build.`,
      );
    }
    return override;
  }
  const cached = cachedLlamaServerPath();
  if (!isExecutable(cached)) {
    throw new LlamaServerNotFoundError(
      `llama-server is not built (expected ${cached}). Run \`npm run setup:llama-server\` ` +
        `or set ${LLAMA_SERVER_PATH_ENV} to an existing binary.`,
    );
  }
  return cached;
}
