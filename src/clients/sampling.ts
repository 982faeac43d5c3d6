/**
 * Recommended sampling per model family, from the model cards (or the `generation_config.json`
 * the model ships with, which is what Hugging Face transformers applies by default), and the
 * opt-in policy the clients apply at construction.
 *
 * Lookup is by model name in any of the forms a backend uses: an Ollama name
 * (`qwen2.5:7b-instruct-q4_K_M`), a GGUF file stem (`Qwen2.5-7B-Instruct-Q4_K_M`) or a
 * llamafile stem (`Mistral-Nemo-Instruct-2407.Q4_K_M`). Case, directories, the file extension,
 * `:latest`, shard suffixes and quantisation suffixes are ignored.
 */
import { UnsupportedModelError } from "../core/errors.ts";

/** Sampling parameters, in the library's camelCase; clients map them to their wire names. */
export interface SamplingParams {
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
}

interface SamplingEntry {
  family: string;
  sampling: SamplingParams;
  /** Normalised names (see `normalizeModelName`) the entry answers to. */
  names: string[];
}

const qwen25Sizes = ["0.5b", "1.5b", "3b", "7b", "14b", "32b", "72b"];
const qwen3Sizes = ["0.6b", "1.7b", "4b", "8b", "14b", "32b", "30b-a3b", "235b-a22b"];
/** Ollama also tags the MoE models by total size alone (`qwen3:30b`). */
const qwen3OllamaSizes = [...qwen3Sizes, "30b", "235b"];
const gemma3Sizes = ["1b", "4b", "12b", "27b"];

const ENTRIES: readonly SamplingEntry[] = [
  {
    // https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/main/generation_config.json (same in every
    // size): temperature 0.7, top_p 0.8, top_k 20 (and repetition_penalty 1.05, not mapped here).
    family: "Qwen2.5 Instruct",
    sampling: { temperature: 0.7, topP: 0.8, topK: 20 },
    names: [
      "qwen2.5",
      ...qwen25Sizes.flatMap((size) => [`qwen2.5:${size}`, `qwen2.5:${size}-instruct`]),
      ...qwen25Sizes.map((size) => `qwen2.5-${size}-instruct`),
    ],
  },
  {
    // https://huggingface.co/Qwen/Qwen3-8B#best-practices — thinking mode (the default):
    // Temperature=0.6, TopP=0.95, TopK=20, MinP=0.
    family: "Qwen3 (thinking)",
    sampling: { temperature: 0.6, topP: 0.95, topK: 20, minP: 0 },
    names: [
      "qwen3",
      ...qwen3OllamaSizes.map((size) => `qwen3:${size}`),
      ...qwen3Sizes.map((size) => `qwen3-${size}`),
      ...["4b", "30b-a3b"].flatMap((size) => [`qwen3:${size}-thinking-2507`, `qwen3-${size}-thinking-2507`]),
    ],
  },
  {
    // https://huggingface.co/Qwen/Qwen3-4B-Instruct-2507#best-practices (and Qwen3-30B-A3B-Instruct-2507):
    // Temperature=0.7, TopP=0.8, TopK=20, MinP=0.
    family: "Qwen3 Instruct 2507",
    sampling: { temperature: 0.7, topP: 0.8, topK: 20, minP: 0 },
    names: ["4b", "30b-a3b"].flatMap((size) => [
      `qwen3:${size}-instruct-2507`,
      `qwen3-${size}-instruct-2507`,
    ]),
  },
  {
    // https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/generation_config.json:
    // temperature 0.6, top_p 0.9 (the card's README gives no other recommendation).
    family: "Llama 3.1 Instruct",
    sampling: { temperature: 0.6, topP: 0.9 },
    names: [
      "llama3.1",
      ...["8b", "70b"].flatMap((size) => [
        `llama3.1:${size}`,
        `llama3.1:${size}-instruct`,
        `llama-3.1-${size}-instruct`,
        `meta-llama-3.1-${size}-instruct`,
      ]),
    ],
  },
  {
    // https://huggingface.co/meta-llama/Llama-3.2-3B-Instruct/blob/main/generation_config.json:
    // temperature 0.6, top_p 0.9.
    family: "Llama 3.2 Instruct",
    sampling: { temperature: 0.6, topP: 0.9 },
    names: [
      "llama3.2",
      ...["1b", "3b"].flatMap((size) => [
        `llama3.2:${size}`,
        `llama3.2:${size}-instruct`,
        `llama-3.2-${size}-instruct`,
        `meta-llama-3.2-${size}-instruct`,
      ]),
    ],
  },
  {
    // https://huggingface.co/mistralai/Mistral-Nemo-Instruct-2407: "Mistral Nemo requires smaller
    // temperatures. We recommend to use a temperature of 0.3."
    family: "Mistral Nemo Instruct 2407",
    sampling: { temperature: 0.3 },
    names: [
      "mistral-nemo",
      "mistral-nemo:12b",
      "mistral-nemo:12b-instruct-2407",
      "mistral-nemo-instruct-2407",
    ],
  },
  {
    // https://huggingface.co/google/gemma-3-4b-it/blob/main/generation_config.json: top_k 64,
    // top_p 0.95, temperature left at its default of 1.0 (the Gemma team's recommended setting).
    family: "Gemma 3 IT",
    sampling: { temperature: 1.0, topP: 0.95, topK: 64 },
    names: [
      "gemma3",
      ...gemma3Sizes.flatMap((size) => [`gemma3:${size}`, `gemma3:${size}-it`, `gemma-3-${size}-it`]),
    ],
  },
  // Deliberately absent: Mistral 7B Instruct v0.3, Ministral 8B and the Phi family. Their cards
  // give no sampling recommendation (only greedy demo snippets), so there is nothing to cite.
];

const BY_NAME: ReadonlyMap<string, SamplingEntry> = new Map(
  ENTRIES.flatMap((entry) => entry.names.map((name) => [name, entry] as const)),
);

const QUANT_SUFFIX = /[-_.:](?:ud[-_])?(?:i?q\d(?:_[a-z0-9]+)*|f16|f32|bf16|fp16|fp8|mxfp4|qat|gguf)$/;
const SHARD_SUFFIX = /-\d{5}-of-\d{5}$/;

/**
 * The lookup key of a model name: lower case, no directories, no `.gguf`/`.llamafile`, no
 * `:latest`, no shard suffix and no quantisation suffixes.
 * @example
 * normalizeModelName("models/Qwen2.5-7B-Instruct-Q4_K_M.gguf") // "qwen2.5-7b-instruct"
 * normalizeModelName("qwen2.5:7b-instruct-q4_K_M")              // "qwen2.5:7b-instruct"
 */
export function normalizeModelName(model: string): string {
  let name = model.trim().split(/[\\/]/).pop() ?? "";
  name = name.toLowerCase().replace(/\.(gguf|llamafile)$/, "");
  name = name.replace(/:latest$/, "").replace(SHARD_SUFFIX, "");
  while (QUANT_SUFFIX.test(name)) name = name.replace(QUANT_SUFFIX, "");
  return name;
}

/** The recommended sampling for `model`, or `null` when the map does not know it. */
export function getSamplingDefaults(model: string): SamplingParams | null {
  const entry = BY_NAME.get(normalizeModelName(model));
  return entry ? { ...entry.sampling } : null;
}

/** The model families the map knows, for error messages. */
export function knownSamplingFamilies(): string[] {
  return ENTRIES.map((entry) => entry.family);
}

/** Inputs of `resolveSampling`. */
export interface ResolveSamplingOptions {
  /** The model name as the backend knows it; `undefined` when the client has none. */
  model: string | undefined;
  recommendedSampling: boolean;
  /** The caller's options (a client's own options object will do): only the sampling fields are read, `undefined` ones are not set. */
  explicit: SamplingParams;
  logger: (line: string) => void;
}

/**
 * The sampling a client sends, decided once at construction:
 * - opted in, model known: the recommended values, with the caller's explicit values winning field by field;
 * - opted in, model unknown: `UnsupportedModelError` (silently using backend defaults would defeat the opt-in);
 * - not opted in: only the caller's values, plus one informational log line when the map knows the model.
 */
export function resolveSampling(options: ResolveSamplingOptions): SamplingParams {
  const explicit = definedOnly(options.explicit);
  const recommended = options.model === undefined ? null : getSamplingDefaults(options.model);
  if (options.recommendedSampling) {
    if (!recommended) {
      throw new UnsupportedModelError(options.model ?? "(no model name)", knownSamplingFamilies());
    }
    return { ...recommended, ...explicit };
  }
  if (recommended) {
    options.logger(
      `forge-guardrails: recommended sampling is known for model '${options.model}' (${describeSampling(recommended)}); pass recommendedSampling: true to apply it.`,
    );
  }
  return explicit;
}

const SAMPLING_KEYS = ["temperature", "topP", "topK", "minP"] as const;

function definedOnly(sampling: SamplingParams): SamplingParams {
  const defined: SamplingParams = {};
  for (const key of SAMPLING_KEYS) if (sampling[key] !== undefined) defined[key] = sampling[key];
  return defined;
}

function describeSampling(sampling: SamplingParams): string {
  return Object.entries(sampling)
    .map(([key, value]) => `${key}=${value}`)
    .join(", ");
}
