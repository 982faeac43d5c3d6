/** Conversations from forge-tiny's Python generator (`tools/tiny-model/forge_gen.py sample`), for tests. */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { z } from "zod";

/** Debian's Python: it has jinja2 (`python3-jinja2`), which the generator renders with. */
const PYTHON = process.env.TEST_GGUF_PYTHON ?? "/usr/bin/python3";
const tinyModelDir = fileURLToPath(new URL("../../tools/tiny-model/", import.meta.url));
const generatorScript = `${tinyModelDir}forge_gen.py`;

/** forge-tiny's tokenizer, as committed. */
export const FORGE_TOKENIZER = `${tinyModelDir}tokenizer.json`;

const ToolSchema = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string(),
    description: z.string(),
    parameters: z.record(z.string(), z.unknown()),
  }),
});

/** One line of `forge_gen.py sample` (every field optional: `--fields` prints a subset). */
export const SampleSchema = z.object({
  /** OpenAI wire messages: tool-call arguments as JSON strings. */
  messages: z.array(z.record(z.string(), z.unknown())).optional(),
  /** The tools in the conversation's variant (`library` or `llamacpp`). */
  tools: z.array(ToolSchema).optional(),
  /** The same tools as the library sends them to llama-server (`toOpenAITool`). */
  libraryTools: z.array(ToolSchema).optional(),
  variant: z.enum(["library", "llamacpp"]).optional(),
  toolNames: z.array(z.string()).optional(),
  /** The values the assistant copies into its calls (tool names, ids, places, free text...). */
  values: z.array(z.string()).optional(),
  /** The conversation rendered with the chat template: the training text. */
  text: z.string().optional(),
  /** forge_tok's token ids of `text` (with `tokenize`). */
  ids: z.array(z.number().int()).optional(),
});
export type Sample = z.infer<typeof SampleSchema>;
export type SampleTool = z.infer<typeof ToolSchema>;

/** Options of {@link sampleConversations}; they map to the sample CLI's flags. */
export interface SampleOptions {
  count: number;
  seed: number;
  variant?: "library" | "llamacpp";
  /** The trainer's copy-dense `--short` conversations. */
  short?: boolean;
  /** Add `ids`, tokenized with this tokenizer JSON. */
  tokenize?: string;
  /** Print only these fields. */
  fields?: readonly (keyof Sample)[];
}

/** Run the generator and parse its JSON lines (streamed: 20,000 conversations are ~100 MB). */
export async function sampleConversations(options: SampleOptions): Promise<Sample[]> {
  const args = [generatorScript, "sample", "--count", String(options.count), "--seed", String(options.seed)];
  if (options.variant) args.push("--variant", options.variant);
  if (options.short) args.push("--short");
  if (options.tokenize) args.push("--tokenize", options.tokenize);
  if (options.fields) args.push("--fields", options.fields.join(","));
  const child = spawn(PYTHON, args, { stdio: ["ignore", "pipe", "pipe"] });
  let errors = "";
  child.stderr.on("data", (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  const samples: Sample[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    if (line.trim()) samples.push(SampleSchema.parse(JSON.parse(line)));
  }
  const status = await exited;
  if (status !== 0) throw new Error(`forge_gen.py sample exited with ${status}: ${errors}`);
  if (samples.length !== options.count) {
    throw new Error(`forge_gen.py sample printed ${samples.length} of ${options.count} conversations`);
  }
  return samples;
}
