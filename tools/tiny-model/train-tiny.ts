/**
 * `npm run train:tiny`: reproduce forge-tiny v2's CPU run end to end, resuming whatever is done.
 *
 * 1. the tokenizer: `tools/tiny-model/tokenizer.json` is committed; `forge_train.py tokenizer`
 *    trains it again only when it is missing;
 * 2. the phases of one 97-minute run (`PHASES`, the committed model's run), on one learning-rate
 *    schedule (warm-up, then linear decay over the last 30 %):
 *    - to minute 25: one-request conversations (`--short`), batches of ~4,096 tokens, conversations
 *      up to 1,024 tokens; the run gives up if its copy probe is under 2 % after 3 M tokens;
 *    - to minute 44.3: the same with copied values weighted 3 in the loss (`--value-weight 3`);
 *    - to minute 62: the same with 30 % pure-copy conversations (`--echo 0.3`);
 *    - to minute 97: all conversations, batches of ~4,608 tokens, up to 1,536 tokens, values
 *      weighted 3, 20 % pure-copy conversations;
 * 3. export `models/forge-tiny.gguf` (llama.cpp's gguf-py) and plot `models/loss.png`.
 *
 * Training data is generated on the fly (forge_gen.py) and never written; the run checkpoints to
 * `.cache/tiny-model/run/last.pt` every five minutes. Re-running resumes from it: each phase trains
 * only what its share of the run still lacks (from the run's `history.json`), so a finished phase
 * is skipped. The trainer prints a progress line every 20 steps and a copy probe every 200.
 *
 * Needs Debian's python3-torch, python3-numpy, python3-jinja2 and python3-matplotlib
 * (`/usr/bin/python3`, or TINY_PYTHON) and the llama.cpp source (`npm run setup:llama-server`).
 * Options: --minutes M (the run's length; each phase keeps its share), --threads N, --workers N
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

/** The v2 run's length, in minutes of training. */
const RUN_MINUTES = 97;

/** The v2 run's phases: where each ends (minutes into the run) and its own trainer flags. */
const PHASES: readonly { name: string; until: number; flags: readonly string[] }[] = [
  {
    name: "phase 1 (short conversations)",
    until: 25,
    flags: ["--short", "--batch-tokens", "4096", "--max-len", "1024"],
  },
  {
    name: "phase 2 (short conversations, values weighted 3)",
    until: 44.3,
    flags: ["--short", "--batch-tokens", "4096", "--max-len", "1024", "--value-weight", "3"],
  },
  {
    name: "phase 3 (short conversations, values weighted 3, 30 % pure copying)",
    until: 62,
    flags: ["--short", "--batch-tokens", "4096", "--max-len", "1024", "--value-weight", "3", "--echo", "0.3"],
  },
  {
    name: "phase 4 (all conversations, values weighted 3, 20 % pure copying)",
    until: RUN_MINUTES,
    flags: ["--batch-tokens", "4608", "--max-len", "1536", "--value-weight", "3", "--echo", "0.2"],
  },
];
/** Only the first phase gives up on a copy probe under 2 % after 3 M tokens. */
const COPY_FLOOR = ["--min-copy", "0.02", "--min-copy-tokens", "3000000"];
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

/** The trainer's flags shared by every phase (the v2 CPU run's). */
function commonFlags(options: Options): string[] {
  return [
    ...["--tokenizer", tokenizer, "--dir", options.run, "--size", "cpu", "--device", "cpu"],
    ...["--threads", String(options.threads), "--workers", String(options.workers)],
    ...["--total-minutes", String(options.minutes), "--decay-fraction", "0.3", "--warmup", "50"],
    ...["--probe-every", "200", "--probe-count", "100", "--log-every", "20", "--save-every", "300"],
  ];
}

function train(options: Options): void {
  const scale = options.minutes / RUN_MINUTES;
  for (const [index, phase] of PHASES.entries()) {
    const until = phase.until * scale;
    const done = trainedMinutes(options.run);
    const left = until - done;
    if (left < DONE_WITHIN) {
      console.log(`${phase.name}: done (${done.toFixed(1)} of ${until.toFixed(1)} min trained)`);
      continue;
    }
    console.log(
      `${phase.name}: ${done.toFixed(1)} of ${until.toFixed(1)} min trained, ${left.toFixed(1)} to go`,
    );
    run(python, [
      ...[trainer, "train", ...commonFlags(options), ...phase.flags],
      ...(index === 0 ? COPY_FLOOR : []),
      ...["--minutes", left.toFixed(3)],
    ]);
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
