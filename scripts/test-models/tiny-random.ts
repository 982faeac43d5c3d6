/**
 * The tiny random-weight test model (`.cache/test-models/tiny-random.gguf`): a llama-architecture
 * GGUF with a real byte-level BPE tokenizer, Qwen2.5's ChatML/Hermes chat template and random
 * layers. Its embeddings and output head make it behave like a tiny bigram model that tends to end
 * its turn at once or open a `<tool_call>`: with `tool_choice: "required"` llama-server's grammar
 * then completes a call within about 60 tokens (always at temperature 0); otherwise it replies ""
 * or a little `<tool_call>` noise, or a tool call when tools are given. The tokenizer, special
 * tokens and template are real, so `llama-server --jinja` renders tools, detects the `<tool_call>`
 * JSON format and constrains tool calls with a grammar.
 */
import type { Matrix } from "./gguf-writer.ts";
import {
  encodeLlamaGguf,
  type LlamaShape,
  ones,
  randomBlocks,
  randomMatrix,
  SPECIAL_TOKENS,
  TokenType,
} from "./llama-gguf.ts";
import { createNormalSampler } from "./seeded-random.ts";

/** The test model's shape; {@link buildTinyRandomGguf} can narrow its heads. */
export const TINY_RANDOM_SHAPE: LlamaShape = {
  contextLength: 2048,
  embeddingLength: 64,
  feedForwardLength: 128,
  blockCount: 2,
  headCount: 4,
  headCountKv: 2,
};
const MERGE_COUNT = 300;

/** Qwen2.5-7B-Instruct's chat template with a neutral default system prompt. */
export const TINY_RANDOM_CHAT_TEMPLATE = String.raw`{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
`;

/**
 * Text the BPE merges are learned from: English plus the JSON and markup a tool-calling
 * conversation contains, so common words and punctuation get multi-byte tokens.
 */
const TRAINING_TEXT = `
The quick brown fox jumps over the lazy dog. You are a helpful assistant.
What is the weather in Paris today? Let me check the weather for you.
The temperature in London is 18 degrees and it is raining.
You may call one or more functions to assist with the user query.
For each function call, return a json object with function name and arguments.
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
{"name": "search", "arguments": {"query": "latest news", "limit": 10}}
{"type": "function", "function": {"name": "read_file", "description": "Read a file",
"parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
<tool_response> {"result": "ok", "content": "hello world"} </tool_response>
Hello, world! How are you? I am fine, thank you. Please write the answer in the file.
the and that this with from have what when where which there their then than them these
function arguments name description parameters properties required string number object
`;

/**
 * Residual-stream features: every token's embedding is one of these one-hot directions, and the
 * random layers barely perturb it, so the next-token distribution depends on the current token's
 * feature only (a bigram model).
 */
const Feature = { DEFAULT: 0, NEWLINE: 1, TOOL_CALL: 2 } as const;

/**
 * Next-token logits per feature (before temperature); unlisted tokens get BASE_LOGIT. After "\n"
 * (the end of every generation prompt): end the turn, else open "<tool_call>"; after
 * "<tool_call>": "\n", which completes the Hermes tool-call trigger; elsewhere (inside
 * grammar-constrained JSON): close strings and objects quickly, then end the turn. Greedy sampling
 * therefore replies "" unless `tool_choice: "required"` forbids ending first. Where the grammar
 * offers tool names, "g" beats the other letters, so of the tests' `get_weather` and
 * `report_weather` the model calls `get_weather` (the workflows' required first step) whatever
 * the seed; make-test-gguf.py left that choice to its random noise.
 */
const BASE_LOGIT = -4;
const FEATURE_LOGITS: readonly [feature: number, logits: Record<string, number>][] = [
  [Feature.NEWLINE, { "<|im_end|>": 6, "<tool_call>": 5.5, "{": 1 }],
  [Feature.TOOL_CALL, { "\n": 8, "<|im_end|>": 5 }],
  [Feature.DEFAULT, { '"': 3, "<|im_end|>": 3, "}": 2, ":": 1, g: -3 }],
];

/** Options of {@link buildTinyRandomGguf}. */
export interface TinyRandomOptions {
  /** Seed of the random weights. Default 1234. */
  seed?: number;
  /** Attention heads (default 4) and key/value heads (default 2): 2 and 1 make 32-wide heads. */
  headCount?: number;
  headCountKv?: number;
}

/** The test model's GGUF file and what its tokenizer holds. */
export function buildTinyRandomGguf(options: TinyRandomOptions = {}): {
  gguf: Buffer;
  vocabularySize: number;
  mergeCount: number;
} {
  const shape: LlamaShape = {
    ...TINY_RANDOM_SHAPE,
    headCount: options.headCount ?? TINY_RANDOM_SHAPE.headCount,
    headCountKv: options.headCountKv ?? TINY_RANDOM_SHAPE.headCountKv,
  };
  const byteEncoder = bytesToUnicode();
  const merges = tinyRandomMerges();
  const tokens = [...byteEncoder];
  const known = new Set(tokens);
  for (const [left, right] of merges) {
    if (known.has(left + right)) continue;
    known.add(left + right);
    tokens.push(left + right);
  }
  const tokenTypes: TokenType[] = tokens.map(() => TokenType.NORMAL);
  const specialIds = new Map<string, number>();
  for (const { text, control } of SPECIAL_TOKENS) {
    specialIds.set(text, tokens.length);
    tokens.push(text);
    tokenTypes.push(control ? TokenType.CONTROL : TokenType.USER_DEFINED);
  }

  const normal = createNormalSampler(options.seed ?? 1234);
  const { tokenEmbedding, output } = designBigramWeights(tokens, specialIds, shape, normal);
  const gguf = encodeLlamaGguf({
    name: "tiny-random-chatml",
    shape,
    tokenizer: {
      tokens,
      tokenTypes,
      merges: merges.map(([left, right]) => `${left} ${right}`),
      endOfTextId: specialIds.get("<|endoftext|>") as number,
      endOfTurnId: specialIds.get("<|im_end|>") as number,
      chatTemplate: TINY_RANDOM_CHAT_TEMPLATE,
    },
    tokenEmbedding,
    blocks: randomBlocks(shape, normal),
    outputNorm: ones(shape.embeddingLength),
    output,
    matrixType: "F32",
  });
  return { gguf, vocabularySize: tokens.length, mergeCount: merges.length };
}

/** The test model's BPE merges, learned from its training text and chat template. */
export function tinyRandomMerges(): [string, string][] {
  return learnMerges(TRAINING_TEXT + TINY_RANDOM_CHAT_TEMPLATE, MERGE_COUNT);
}

/**
 * GPT-2's reversible byte → printable character table of byte-level BPE vocabularies, indexed by
 * byte.
 */
export function bytesToUnicode(): string[] {
  const printable = (from: string, to: string): number[] =>
    Array.from(
      { length: to.charCodeAt(0) - from.charCodeAt(0) + 1 },
      (_, index) => from.charCodeAt(0) + index,
    );
  const kept = new Set([
    ...printable("!", "~"),
    ...printable("\u00a1", "\u00ac"),
    ...printable("\u00ae", "\u00ff"),
  ]);
  let offset = 0;
  return Array.from({ length: 256 }, (_, byte) =>
    String.fromCharCode(kept.has(byte) ? byte : 256 + offset++),
  );
}

/**
 * Learns byte-level BPE merges from `text`, the most frequent pair first, ties broken by the pair's
 * text; stops at `mergeCount` or when no pair occurs twice.
 */
export function learnMerges(text: string, mergeCount: number): [string, string][] {
  const byteEncoder = bytesToUnicode();
  // Close to the GPT-2 pre-tokenizer: merges never cross word boundaries.
  const pieces = text.match(/'(?:s|t|re|ve|m|ll|d)| ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\s+/g) ?? [];
  let words = countWords(
    pieces.map((piece) => [...Buffer.from(piece, "utf8")].map((byte) => byteEncoder[byte] as string)),
  );
  const merges: [string, string][] = [];
  while (merges.length < mergeCount) {
    const pairCounts = new Map<string, { pair: [string, string]; count: number }>();
    for (const { symbols, count } of words.values()) {
      for (let index = 0; index + 1 < symbols.length; index++) {
        const pair: [string, string] = [symbols[index] as string, symbols[index + 1] as string];
        const key = pair.join("\u0000");
        const entry = pairCounts.get(key) ?? { pair, count: 0 };
        entry.count += count;
        pairCounts.set(key, entry);
      }
    }
    let best: { pair: [string, string]; count: number } | undefined;
    for (const entry of pairCounts.values()) {
      if (
        !best ||
        entry.count > best.count ||
        (entry.count === best.count && comparePairs(entry.pair, best.pair) < 0)
      ) {
        best = entry;
      }
    }
    if (!best || best.count < 2) break;
    const [left, right] = best.pair;
    merges.push(best.pair);
    words = countWords(
      [...words.values()].map(({ symbols }) => mergePair(symbols, left, right)),
      [...words.values()].map(({ count }) => count),
    );
  }
  return merges;
}

/** Distinct words (symbol sequences) with how often each occurs. */
function countWords(
  words: readonly string[][],
  counts: readonly number[] = [],
): Map<string, { symbols: string[]; count: number }> {
  const counted = new Map<string, { symbols: string[]; count: number }>();
  words.forEach((symbols, index) => {
    const key = symbols.join("\u0000");
    const entry = counted.get(key) ?? { symbols, count: 0 };
    entry.count += counts[index] ?? 1;
    counted.set(key, entry);
  });
  return counted;
}

function mergePair(symbols: readonly string[], left: string, right: string): string[] {
  const merged: string[] = [];
  for (let index = 0; index < symbols.length; index++) {
    if (symbols[index] === left && symbols[index + 1] === right) {
      merged.push(left + right);
      index++;
    } else {
      merged.push(symbols[index] as string);
    }
  }
  return merged;
}

/** Python's tuple order on `(left, right)`: by code point, left first. */
function comparePairs(a: readonly [string, string], b: readonly [string, string]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  return 0;
}

/**
 * The token embeddings and output head that make the model a small bigram model. With random
 * weights alone it never writes `<tool_call>\n`, so llama-server's `tool_choice: "required"`
 * grammar (free content until that marker) would just run to max_tokens.
 */
function designBigramWeights(
  tokens: readonly string[],
  specialIds: ReadonlyMap<string, number>,
  shape: LlamaShape,
  normal: ReturnType<typeof createNormalSampler>,
): { tokenEmbedding: Matrix; output: Matrix } {
  const width = shape.embeddingLength;
  const byteEncoder = bytesToUnicode();
  const specials = new Set(specialIds.values());
  const newline = byteEncoder[0x0a] as string;

  const tokenEmbedding: Matrix = {
    rows: tokens.length,
    columns: width,
    values: new Float32Array(tokens.length * width),
  };
  tokens.forEach((token, index) => {
    let feature: number = Feature.DEFAULT;
    if (index === specialIds.get("<tool_call>")) feature = Feature.TOOL_CALL;
    else if (!specials.has(index) && token.endsWith(newline)) feature = Feature.NEWLINE;
    tokenEmbedding.values[index * width + feature] = 1;
  });

  // RMS norm turns a one-hot embedding into sqrt(width) * one-hot, so a weight of
  // logit / sqrt(width) yields that logit; the small noise breaks ties.
  const scale = Math.sqrt(width);
  const tokenIds = new Map(tokens.map((token, index) => [token, index]));
  const output = randomMatrix(tokens.length, width, normal);
  for (const [feature, logits] of FEATURE_LOGITS) {
    for (let row = 0; row < tokens.length; row++) {
      const at = row * width + feature;
      output.values[at] = (output.values[at] as number) + BASE_LOGIT / scale;
    }
    for (const [text, logit] of Object.entries(logits)) {
      const byteText = [...Buffer.from(text, "utf8")].map((byte) => byteEncoder[byte]).join("");
      const index = specialIds.get(text) ?? tokenIds.get(text) ?? tokenIds.get(byteText);
      if (index === undefined) throw new Error(`no token for ${JSON.stringify(text)}`);
      output.values[index * width + feature] = logit / scale;
    }
  }
  return { tokenEmbedding, output };
}
