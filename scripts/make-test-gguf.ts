/**
 * Writes the tiny random-weight test models by running Python with Debian's numpy and llama.cpp's
 * `gguf-py`: `.cache/test-models/tiny-random.gguf` (`scripts/make-test-gguf.py`) and
 * `.cache/test-models/forge-tiny-random.gguf` (forge-tiny's tokenizer and chat template with random
 * weights, `tools/tiny-model/forge_train.py export --random`). Run with `npm run make:test-gguf`
 * (add `-- --force` to regenerate).
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
const tinyModelDir = fileURLToPath(new URL("../tools/tiny-model/", import.meta.url));
/** What the forge-tiny fixture is made from: it is regenerated when one of them is newer. */
const forgeTinySources = ["forge_train.py", "forge_tok.py", "tokenizer.json", "chat-template.jinja"].map(
  (name) => join(tinyModelDir, name),
);

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
    await assertNumpy();
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

/** Absolute path of the forge-tiny fixture (`<repo>/.cache/test-models/forge-tiny-random.gguf`). */
export function forgeTinyFixturePath(): string {
  return fileURLToPath(new URL("../.cache/test-models/forge-tiny-random.gguf", import.meta.url));
}

/**
 * Returns the path of a GGUF with forge-tiny's tokenizer (`tools/tiny-model/tokenizer.json`) and
 * chat template but random weights, generating it when missing or older than its sources: tests
 * of the tokenizer and the chat rendering run against it whatever trained model is committed.
 */
export async function makeForgeTinyFixture(
  options: { force?: boolean; log?: ProgressLog } = {},
): Promise<string> {
  const log = options.log ?? ((line: string) => console.log(`[make-test-gguf] ${line}`));
  const output = forgeTinyFixturePath();
  if (!options.force && (await isFresh(output, forgeTinySources))) return output;
  const sourceDir = await ensureLlamaCppSource({ log });
  return withDirectoryLock(`${output}.lock`, log, async () => {
    if (!options.force && (await isFresh(output, forgeTinySources))) return output;
    await assertNumpy();
    const result = await execa(
      TEST_GGUF_PYTHON,
      [
        join(tinyModelDir, "forge_train.py"),
        "export",
        "--random",
        "--size",
        "test",
        "--tokenizer",
        join(tinyModelDir, "tokenizer.json"),
        "--gguf-py",
        join(sourceDir, "gguf-py"),
        "--output",
        output,
      ],
      { all: true, reject: false },
    );
    if (result.failed)
      throw new TestModelError(`forge_train.py export --random failed:\n${result.all ?? ""}`);
    log(result.stdout.trim());
    return output;
  });
}

async function assertNumpy(): Promise<void> {
  const numpyCheck = await execa(TEST_GGUF_PYTHON, ["-c", "import numpy"], { reject: false });
  if (numpyCheck.failed) {
    throw new TestModelError(
      `${TEST_GGUF_PYTHON} cannot import numpy. Install it with ` +
        "`apt-get update && apt-get install -y python3-numpy` (or set TEST_GGUF_PYTHON).",
    );
  }
}

async function isFresh(output: string, sources: readonly string[] = [generatorScript]): Promise<boolean> {
  if (!existsSync(output)) return false;
  const [model, ...inputs] = await Promise.all([stat(output), ...sources.map((source) => stat(source))]);
  return inputs.every((input) => model.mtimeMs >= input.mtimeMs);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const force = process.argv.includes("--force");
  // One after the other: both may clone the llama.cpp source.
  makeTestGguf({ force })
    .then(() => makeForgeTinyFixture({ force }))
    .catch((error: unknown) => {
      console.error(`[make-test-gguf] ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    });
}
