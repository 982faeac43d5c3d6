/**
 * Where the managed llama-server comes from: `$LLAMA_SERVER_PATH`, then `PATH`, then the build
 * cache, checked with fake executables in temporary folders.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LlamaServerNotFoundError, resolveLlamaServerPath } from "../../src/server/llama-server-path.ts";

const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const path = mkdtempSync(join(tmpdir(), "forge-llama-server-path-"));
  folders.push(path);
  return path;
}

/** Writes a file named `llama-server` (or `name`) in `dir`, executable unless told otherwise. */
function fakeBinary(dir: string, { executable = true, name = "llama-server" } = {}): string {
  const path = join(dir, name);
  writeFileSync(path, "#!/bin/sh\nexit 0\n");
  chmodSync(path, executable ? 0o755 : 0o644);
  return path;
}

describe("resolveLlamaServerPath", () => {
  it("takes $LLAMA_SERVER_PATH over PATH and the cache", () => {
    const explicit = fakeBinary(folder(), { name: "my-llama-server" });
    const onPath = folder();
    fakeBinary(onPath);
    const cached = fakeBinary(folder());
    const binary = resolveLlamaServerPath({
      env: { LLAMA_SERVER_PATH: explicit, PATH: onPath },
      cachedPath: cached,
    });
    expect(binary).toBe(explicit);
  });

  it("fails on a $LLAMA_SERVER_PATH that is not executable instead of falling back", () => {
    const onPath = folder();
    fakeBinary(onPath);
    const notExecutable = fakeBinary(folder(), { executable: false });
    const resolve = () => resolveLlamaServerPath({ env: { LLAMA_SERVER_PATH: notExecutable, PATH: onPath } });
    expect(resolve).toThrow(LlamaServerNotFoundError);
    expect(resolve).toThrow(`LLAMA_SERVER_PATH=${notExecutable} is not an executable file`);
  });

  it("takes the first executable llama-server on PATH, skipping folders without one", () => {
    const empty = folder();
    const nonExecutable = folder();
    fakeBinary(nonExecutable, { executable: false });
    const withDirectory = folder();
    mkdirSync(join(withDirectory, "llama-server"));
    const first = folder();
    const firstBinary = fakeBinary(first);
    const second = folder();
    fakeBinary(second);
    const searchPath = ["", empty, nonExecutable, withDirectory, first, second].join(delimiter);
    expect(resolveLlamaServerPath({ env: { PATH: searchPath }, cachedPath: fakeBinary(folder()) })).toBe(
      firstBinary,
    );
  });

  it("treats an empty $LLAMA_SERVER_PATH as unset", () => {
    const onPath = folder();
    const binary = fakeBinary(onPath);
    expect(resolveLlamaServerPath({ env: { LLAMA_SERVER_PATH: "", PATH: onPath } })).toBe(binary);
  });

  it("falls back to the build cache when PATH has none", () => {
    const cached = fakeBinary(folder());
    expect(resolveLlamaServerPath({ env: { PATH: folder() }, cachedPath: cached })).toBe(cached);
    expect(resolveLlamaServerPath({ env: {}, cachedPath: cached })).toBe(cached);
  });

  it("says in one line what to install or set when none exists", () => {
    const missing = join(folder(), "bin", "llama-server");
    let thrown: unknown;
    try {
      resolveLlamaServerPath({ env: { PATH: folder() }, cachedPath: missing });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LlamaServerNotFoundError);
    const { name, message } = thrown as Error;
    expect(name).toBe("LlamaServerNotFoundError");
    expect(message).not.toContain("\n");
    expect(message).toMatch(/^llama-server not found/);
    expect(message).toContain("brew install llama.cpp");
    expect(message).toContain("PATH");
    expect(message).toContain("LLAMA_SERVER_PATH");
    expect(message).toContain("npm run setup:llama-server");
  });
});
