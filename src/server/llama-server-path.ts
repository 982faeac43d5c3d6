import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ForgeError } from "../core/errors.ts";
import { findOnPath, isExecutable } from "./executables.ts";

/** Environment variable that points at an existing `llama-server` binary and bypasses the lookup. */
export const LLAMA_SERVER_PATH_ENV = "LLAMA_SERVER_PATH";

const LLAMA_SERVER_BINARY = "llama-server";

/** Thrown when no runnable `llama-server` binary can be found. */
export class LlamaServerNotFoundError extends ForgeError {}

/**
 * Absolute path of the folder where `npm run setup:llama-server` keeps the llama.cpp clone,
 * the CMake build tree, the built binary and its stamp file (`<repo>/.cache/llama-server`).
 * In an installed package it is relative to the package's folder and usually absent.
 */
export function llamaServerCacheDir(): string {
  return fileURLToPath(new URL("../../.cache/llama-server/", import.meta.url)).replace(/\/$/, "");
}

/** Absolute path where the setup script installs the `llama-server` binary it builds. */
export function cachedLlamaServerPath(): string {
  return join(llamaServerCacheDir(), "bin", "llama-server");
}

/** Where `resolveLlamaServerPath` looks; the defaults are the process's environment and the cache. */
export interface LlamaServerLookup {
  /** Environment holding `LLAMA_SERVER_PATH` and `PATH` (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** The build cache's binary (default `cachedLlamaServerPath()`). */
  cachedPath?: string;
}

/**
 * Returns the `llama-server` binary to spawn, looked up in this order:
 * 1. `$LLAMA_SERVER_PATH` when set: an explicit setting wins over `PATH` (the issue listed `PATH`
 *    first; a variable set on purpose must not be shadowed by whatever `PATH` holds), and a wrong
 *    one is an error rather than silently skipped;
 * 2. the first executable `llama-server` on `PATH` (e.g. `brew install llama.cpp`);
 * 3. the repository's build cache, written by `npm run setup:llama-server`.
 *
 * @throws {LlamaServerNotFoundError} when `$LLAMA_SERVER_PATH` is not an executable file, or when
 * none of the three has one; the message says what to install or set.
 * @example
 * ```ts
 * const binary = resolveLlamaServerPath();
 * spawn(binary, ["--model", modelPath, "--jinja"]);
 * ```
 */
export function resolveLlamaServerPath(lookup: LlamaServerLookup = {}): string {
  const env = lookup.env ?? process.env;
  const override = env[LLAMA_SERVER_PATH_ENV];
  if (override) {
    if (!isExecutable(override)) {
      throw new LlamaServerNotFoundError(
        `${LLAMA_SERVER_PATH_ENV}=${override} is not an executable file: point it at llama.cpp's ` +
          `llama-server binary, or unset it to look on PATH.`,
      );
    }
    return override;
  }
  const onPath = findOnPath(LLAMA_SERVER_BINARY, env.PATH);
  if (onPath) return onPath;
  const cached = lookup.cachedPath ?? cachedLlamaServerPath();
  if (isExecutable(cached)) return cached;
  throw new LlamaServerNotFoundError(
    "llama-server not found: install llama.cpp's llama-server (e.g. `brew install llama.cpp`, or " +
      `build it from source) and put it on PATH, or set ${LLAMA_SERVER_PATH_ENV} to the binary; ` +
      "in the forge-guardrails repository, `npm run setup:llama-server` builds it.",
  );
}
