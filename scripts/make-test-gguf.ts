/**
 * Writes the tiny random-weight test models from TypeScript (no Python): `tiny-random.gguf`,
 * its 32-wide-head variant `tiny-random-head32.gguf` (quantized KV caches need heads a multiple
 * of 32 wide) and forge-tiny's tokenizer fixture `forge-tiny-random.gguf`, all in
 * `.cache/test-models/`. Each is rewritten when missing or older than what it is made from, and the
 * same seed always writes the same bytes. Run with `npm run make:test-gguf` (add `-- --force` to
 * regenerate); `npm test` runs it before the tests.
 */
import { existsSync, statSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ProgressLog } from "./setup-llama-server.ts";
import { buildForgeTinyRandomGguf } from "./test-models/forge-tiny-random.ts";
import { buildTinyRandomGguf } from "./test-models/tiny-random.ts";

/** Thrown when a test model cannot be generated. */
export class TestModelError extends Error {
  override name = "TestModelError";
}

/** Options of the `make*` functions. */
export interface MakeTestModelOptions {
  /** Rewrite the file even when it is up to date. */
  force?: boolean;
  log?: ProgressLog;
}

const fromHere = (path: string): string => fileURLToPath(new URL(path, import.meta.url));
const tinyModelDir = fromHere("../tools/tiny-model/");
const writerSources = ["gguf-writer.ts", "llama-gguf.ts", "seeded-random.ts"].map((name) =>
  fromHere(`./test-models/${name}`),
);
const tinyRandomSources = [...writerSources, fromHere("./test-models/tiny-random.ts")];
const forgeTinySources = [
  ...writerSources,
  fromHere("./test-models/forge-tiny-random.ts"),
  `${tinyModelDir}tokenizer.json`,
  `${tinyModelDir}chat-template.jinja`,
];

const defaultLog: ProgressLog = (line) => console.log(`[make-test-gguf] ${line}`);

/** Absolute path of the tiny random test model (`<repo>/.cache/test-models/tiny-random.gguf`). */
export function testModelPath(): string {
  return fromHere("../.cache/test-models/tiny-random.gguf");
}

/** Returns the tiny random test model's path, writing it when missing or stale (well under a second). */
export function makeTestGguf(options: MakeTestModelOptions = {}): Promise<string> {
  return writeIfStale(testModelPath(), tinyRandomSources, options, () => {
    const { gguf, vocabularySize, mergeCount } = buildTinyRandomGguf();
    return { gguf, summary: `${vocabularySize} tokens, ${mergeCount} merges` };
  });
}

/** Absolute path of the 32-wide-head variant (`<repo>/.cache/test-models/tiny-random-head32.gguf`). */
export function head32TestModelPath(): string {
  return fromHere("../.cache/test-models/tiny-random-head32.gguf");
}

/**
 * Returns the path of the tiny test model with 2 attention heads and 1 key/value head (32 wide
 * instead of 16), so q8_0 / q4_0 KV-cache blocks of 32 values divide the head size.
 */
export function makeHead32TestGguf(options: MakeTestModelOptions = {}): Promise<string> {
  return writeIfStale(head32TestModelPath(), tinyRandomSources, options, () => {
    const { gguf } = buildTinyRandomGguf({ headCount: 2, headCountKv: 1 });
    return { gguf, summary: "2 heads, 1 key/value head" };
  });
}

/** Absolute path of the forge-tiny fixture (`<repo>/.cache/test-models/forge-tiny-random.gguf`). */
export function forgeTinyFixturePath(): string {
  return fromHere("../.cache/test-models/forge-tiny-random.gguf");
}

/**
 * Returns the path of a GGUF with forge-tiny's tokenizer (`tools/tiny-model/tokenizer.json`) and
 * chat template but random weights, writing it when missing or older than its sources: tests of
 * the tokenizer and the chat rendering run against it whatever trained model is committed.
 */
export function makeForgeTinyFixture(options: MakeTestModelOptions = {}): Promise<string> {
  return writeIfStale(forgeTinyFixturePath(), forgeTinySources, options, () => {
    const gguf = buildForgeTinyRandomGguf({
      tokenizerPath: `${tinyModelDir}tokenizer.json`,
      chatTemplatePath: `${tinyModelDir}chat-template.jinja`,
    });
    return { gguf, summary: "forge-tiny's tokenizer, random weights" };
  });
}

/** Writes all three test models; returns their paths. */
export async function makeAllTestGgufs(options: MakeTestModelOptions = {}): Promise<string[]> {
  return [
    await makeTestGguf(options),
    await makeHead32TestGguf(options),
    await makeForgeTinyFixture(options),
  ];
}

/**
 * Writes `build()`'s file to `output` unless it is newer than every source. Each writer renames
 * its own partial file into place, so parallel test workers need no lock.
 */
async function writeIfStale(
  output: string,
  sources: readonly string[],
  options: MakeTestModelOptions,
  build: () => { gguf: Buffer; summary: string },
): Promise<string> {
  const log = options.log ?? defaultLog;
  if (!options.force && isFresh(output, sources)) {
    log(`up to date: ${output}`);
    return output;
  }
  let built: { gguf: Buffer; summary: string };
  try {
    built = build();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TestModelError(`cannot generate ${output}: ${reason}`, { cause: error });
  }
  await mkdir(dirname(output), { recursive: true });
  const partial = `${output}.${process.pid}.partial`;
  await writeFile(partial, built.gguf);
  await rename(partial, output);
  log(`wrote ${output} (${built.summary}, ${(built.gguf.length / 1e6).toFixed(1)} MB)`);
  return output;
}

function isFresh(output: string, sources: readonly string[]): boolean {
  if (!existsSync(output)) return false;
  const written = statSync(output).mtimeMs;
  return sources.every((source) => statSync(source).mtimeMs <= written);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  makeAllTestGgufs({ force: process.argv.includes("--force") }).catch((error: unknown) => {
    console.error(`[make-test-gguf] ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
