/**
 * `npm run train:tiny`: reproduce forge-tiny v2's CPU run end to end, resuming whatever is done.
 *
 * 1. the tokenizer: `tools/tiny-model/tokenizer.json` is committed; `forge_train.py tokenizer`
 *    trains it again only when it is missing;
 * 2. phase 1, the first 25 of 110 minutes: one-request conversations (`--short`), batches of
 *    ~4,096 tokens, conversations up to 1,024 tokens;
 * 3. phase 2, up to 110 minutes: all conversations, batches of ~4,608 tokens, up to 1,536 tokens;
 *    both phases follow one learning-rate schedule over the whole run (warm-up, then linear decay
 *    over its last 30 %), and a run whose copy probe is under 2 % after 3 M tokens stops;
 * 4. export `models/forge-tiny.gguf` (llama.cpp's gguf-py) and plot `models/loss.png`.
 *
 * Training data is generated on the fly (forge_gen.py) and never written; the run checkpoints to
 * `.cache/tiny-model/run/last.pt` every five minutes. Re-running resumes from it: each phase trains
 * only what its share of the run still lacks (from the run's `history.json`), so a finished phase
 * is skipped. The trainer prints a progress line every 20 steps and a copy probe every 200.
 *
 * Needs Debian's python3-torch, python3-numpy, python3-jinja2 and python3-matplotlib
 * (`/usr/bin/python3`, or TINY_PYTHON) and the llama.cpp source (`npm run setup:llama-server`).
 * Options: --minutes M (the run's length; phase 1 keeps its 25/110 share), --threads N, --workers N
 * (data processes), --run DIR, --output GGUF.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { z } from "zod";
import { ensureLlamaCppSource } from "../../scripts/setup-llama-server.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const here = fileURLToPath(new URL("./", import.meta.url));
const python = process.env.TINY_PYTHON ?? "/usr/bin/python3";
const trainer = join(here, "forge_train.py");
const tokenizer = join(here, "tokenizer.json");

/** The v2 run: 110 minutes, the first 25 on short conversations. */
const RUN_MINUTES = 110;
const PHASE_ONE_MINUTES = 25;
/** A phase with less than this left (minutes) is done. */
const DONE_WITHIN = 0.05;

const OptionsSchema = z.object({
  minutes: z.coerce.number().positive().default(RUN_MINUTES),
  threads: z.coerce.number().int().positive().default(2),
  workers: z.coerce.number().int().positive().default(1),
  run: z.string().default(join(root, ".cache", "tiny-model", "run")),
  output: z.string().default(join(root, "models", "forge-tiny.gguf")),
});
type Options = z.infer<typeof OptionsSchema>;

/** What the trainer writes to RUN/history.json (older trainers wrote no `seconds`). */
const HistorySchema = z.object({
  history: z.array(z.tuple([z.number(), z.number(), z.number(), z.number()])),
  runs: z.array(z.object({ argv: z.array(z.string()), stopped: z.string().optional() })),
  seconds: z.number().optional(),
});
type History = z.infer<typeof HistorySchema>;

interface Phase {
  name: string;
  /** Where the phase ends, in minutes of training since the run began. */
  until: number;
  flags: string[];
}

function readOptions(): Options {
  const { values } = parseArgs({
    options: {
      minutes: { type: "string" },
      threads: { type: "string" },
      workers: { type: "string" },
      run: { type: "string" },
      output: { type: "string" },
    },
  });
  return OptionsSchema.parse(values);
}

function run(command: string, args: string[]): void {
  console.log(`$ ${command} ${args.join(" ")}`);
  const result = spawnSync(command, args, {
    stdio: "inherit",
    env: { ...process.env, PYTHONUNBUFFERED: "1" },
  });
  if (result.status !== 0) throw new Error(`${command} failed with status ${result.status}`);
}

function readHistory(runDir: string): History | null {
  const path = join(runDir, "history.json");
  if (!existsSync(path)) return null;
  return HistorySchema.parse(JSON.parse(readFileSync(path, "utf8")));
}

/** Minutes of training the run's checkpoint holds (the last logged step when `seconds` is absent). */
function trainedMinutes(runDir: string): number {
  const history = readHistory(runDir);
  if (!history) return 0;
  return (history.seconds ?? history.history.at(-1)?.[2] ?? 0) / 60;
}

/** The trainer's flags shared by both phases (the v2 CPU run's). */
function commonFlags(options: Options): string[] {
  return [
    ...["--tokenizer", tokenizer, "--dir", options.run, "--size", "cpu", "--device", "cpu"],
    ...["--threads", String(options.threads), "--workers", String(options.workers)],
    ...["--total-minutes", String(options.minutes), "--decay-fraction", "0.3", "--warmup", "50"],
    ...["--probe-every", "200", "--probe-count", "100", "--log-every", "20", "--save-every", "300"],
    ...["--min-copy", "0.02", "--min-copy-tokens", "3000000"],
  ];
}

function phases(options: Options): Phase[] {
  return [
    {
      name: "phase 1 (short conversations)",
      until: (options.minutes * PHASE_ONE_MINUTES) / RUN_MINUTES,
      flags: ["--short", "--batch-tokens", "4096", "--max-len", "1024"],
    },
    {
      name: "phase 2 (all conversations)",
      until: options.minutes,
      flags: ["--batch-tokens", "4608", "--max-len", "1536"],
    },
  ];
}

function train(options: Options): void {
  for (const phase of phases(options)) {
    const done = trainedMinutes(options.run);
    const left = phase.until - done;
    if (left < DONE_WITHIN) {
      console.log(`${phase.name}: done (${done.toFixed(1)} of ${phase.until.toFixed(1)} min trained)`);
      continue;
    }
    console.log(
      `${phase.name}: ${done.toFixed(1)} of ${phase.until.toFixed(1)} min trained, ${left.toFixed(1)} to go`,
    );
    run(python, [trainer, "train", ...commonFlags(options), ...phase.flags, "--minutes", left.toFixed(3)]);
    const stopped = readHistory(options.run)?.runs.at(-1)?.stopped;
    if (stopped?.startsWith("copy probe")) {
      throw new Error(`the trainer gave up: ${stopped}. Delete ${options.run} to start over.`);
    }
  }
}

async function main(): Promise<void> {
  const options = readOptions();
  run(python, ["-c", "import torch, numpy, jinja2, matplotlib"]);
  if (!existsSync(tokenizer)) run(python, [trainer, "tokenizer", "--out", tokenizer]);
  train(options);
  const source = await ensureLlamaCppSource();
  run(python, [
    ...[trainer, "export", "--dir", options.run, "--tokenizer", tokenizer],
    ...["--gguf-py", join(source, "gguf-py"), "--output", options.output],
  ]);
  run(python, [trainer, "plot", "--dir", options.run, "--output", join(dirname(options.output), "loss.png")]);
}

await main();
