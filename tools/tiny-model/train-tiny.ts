/**
 * `npm run train:tiny`: reproduce forge-tiny end to end, resuming whatever is already done.
 *
 * 1. generate synthetic conversations (generate.ts) and render them with llama-server's chat
 *    template (render.ts) into `.cache/tiny-model/{train,heldout}.jsonl`;
 * 2. train the byte-level BPE tokenizer (tiny_model.py tokenizer);
 * 3. train the model on CPU, checkpointing to `.cache/tiny-model/run/` (resumes when interrupted);
 * 4. export `models/forge-tiny.gguf` with llama.cpp's gguf-py, and plot `models/loss.png`.
 *
 * Needs Debian's python3-torch, python3-numpy, python3-matplotlib (`/usr/bin/python3`), and a
 * built llama-server plus the llama.cpp source (`npm run setup:llama-server`).
 * Options: --steps N and --minutes M (training stops at whichever comes first; the learning-rate
 * schedule follows the same progress), --conversations N, --threads N (or TINY_STEPS, TINY_MINUTES,
 * TINY_CONVERSATIONS, TINY_THREADS).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cachedLlamaServerPath, llamaServerCacheDir } from "../../src/server/llama-server-path.ts";
import { type Conversation, generateConversations, HELDOUT_SEED, TRAIN_SEED } from "./generate.ts";
import { renderConversation, startTemplateServer, type TemplateServer } from "./render.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const here = fileURLToPath(new URL("./", import.meta.url));
const work = join(root, ".cache", "tiny-model");
const python = "/usr/bin/python3";

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const env = process.env[`TINY_${name.toUpperCase()}`];
  const raw = index >= 0 ? process.argv[index + 1] : env;
  return raw === undefined ? fallback : Number(raw);
}

/** A GGUF whose chat template renders the corpus: the test model carries the same template. */
function templateModel(): string {
  const model = join(root, ".cache", "test-models", "tiny-random.gguf");
  if (!existsSync(model)) run("npx", ["tsx", join(root, "scripts", "make-test-gguf.ts")]);
  return model;
}

function run(command: string, args: string[]): void {
  console.log(`$ ${command} ${args.join(" ")}`);
  const result = spawnSync(command, args, { stdio: "inherit" });
  if (result.status !== 0) throw new Error(`${command} failed with status ${result.status}`);
}

async function renderAll(server: TemplateServer, conversations: Conversation[], path: string): Promise<void> {
  const lines: string[] = new Array(conversations.length);
  let next = 0;
  const worker = async () => {
    while (next < conversations.length) {
      const index = next++;
      const conversation = conversations[index] as Conversation;
      const text = await renderConversation(server, conversation);
      lines[index] = JSON.stringify({ text, ...conversation });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  writeFileSync(path, `${lines.join("\n")}\n`);
  console.log(`wrote ${conversations.length} conversations to ${path}`);
}

async function main(): Promise<void> {
  mkdirSync(work, { recursive: true });
  const trainPath = join(work, "train.jsonl");
  const heldoutPath = join(work, "heldout.jsonl");
  if (!existsSync(trainPath) || !existsSync(heldoutPath)) {
    const server = await startTemplateServer(
      cachedLlamaServerPath(),
      templateModel(),
      18930 + (process.pid % 1000),
    );
    try {
      await renderAll(server, generateConversations(option("conversations", 6000), TRAIN_SEED), trainPath);
      await renderAll(server, generateConversations(100, HELDOUT_SEED), heldoutPath);
    } finally {
      await server.stop();
    }
  }
  const tokenizer = join(work, "tokenizer.json");
  const script = join(here, "tiny_model.py");
  if (!existsSync(tokenizer)) run(python, [script, "tokenizer", "--corpus", trainPath, "--out", tokenizer]);
  const runDir = join(work, "run");
  run(python, [
    script,
    "train",
    "--corpus",
    trainPath,
    "--tokenizer",
    tokenizer,
    "--dir",
    runDir,
    "--steps",
    String(option("steps", 3000)),
    "--minutes",
    String(option("minutes", 60)),
    "--threads",
    String(option("threads", 2)),
  ]);
  const gguf = join(llamaServerCacheDir(), "source", "gguf-py");
  const output = join(root, "models", "forge-tiny.gguf");
  run(python, [
    script,
    "export",
    "--dir",
    runDir,
    "--tokenizer",
    tokenizer,
    "--gguf-py",
    gguf,
    "--output",
    output,
  ]);
  run(python, [script, "plot", "--dir", runDir, "--output", join(root, "models", "loss.png")]);
}

await main();
