/**
 * Writes the tiny random-weight test model `.cache/test-models/tiny-random.gguf` by running
 * `scripts/make-test-gguf.py` with Debian's Python and llama.cpp's `gguf-py`. Run with
 * `npm run make:test-gguf` (add `-- --force` to regenerate).
 */
import { existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execa } from "execa";
import { ensureLlamaCppSource, type ProgressLog, withDirectoryLock } from "./setup-llama-server.ts";

/** Python interpreter that runs the generator; Debian's, because it has `python3-numpy`. */
export const TEST_GGUF_PYTHON = process.env.TEST_GGUF_PYTHON ?? "/usr/bin/python3";

const generatorScript = fileURLToPath(new URL("./make-test-gguf.py", import.meta.url));

/** Thrown when the test model cannot be generated. */
export class TestModelError extends Error {
  override name = "TestModelError";
}

/** Absolute path of the generated test model (`<repo>/.cache/test-models/tiny-random.gguf`). */
export function testModelPath(): string {
  return fileURLToPath(new URL("../.cache/test-models/tiny-random.gguf", import.meta.url));
}

/**
 * Returns the test model's path, generating it when it is missing or older than the generator
 * script (about a second once the llama.cpp source is cloned).
 */
export async function makeTestGguf(options: { force?: boolean; log?: ProgressLog } = {}): Promise<string> {
  const log = options.log ?? ((line: string) => console.log(`[make-test-gguf] ${line}`));
  const output = testModelPath();
  if (!options.force && (await isFresh(output))) {
    log(`up to date: ${output}`);
    return output;
  }
  const sourceDir = await ensureLlamaCppSource({ log });
  return withDirectoryLock(`${output}.lock`, log, async () => {
    if (!options.force && (await isFresh(output))) return output;
    const numpyCheck = await execa(TEST_GGUF_PYTHON, ["-c", "import numpy"], { reject: false });
    if (numpyCheck.failed) {
      throw new TestModelError(
        `${TEST_GGUF_PYTHON} cannot import numpy. Install it with ` +
          "`apt-get update && apt-get install -y python3-numpy` (or set TEST_GGUF_PYTHON).",
      );
    }
    const result = await execa(
      TEST_GGUF_PYTHON,
      [generatorScript, "--gguf-py", join(sourceDir, "gguf-py"), "--output", output],
      { all: true, reject: false },
    );
    if (result.failed) throw new TestModelError(`make-test-gguf.py failed:\n${result.all ?? ""}`);
    log(result.stdout.trim());
    return output;
  });
}

async function isFresh(output: string): Promise<boolean> {
  if (!existsSync(output)) return false;
  const [model, generator] = await Promise.all([stat(output), stat(generatorScript)]);
  return model.mtimeMs >= generator.mtimeMs;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  makeTestGguf({ force: process.argv.includes("--force") }).catch((error: unknown) => {
    console.error(`[make-test-gguf] ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
