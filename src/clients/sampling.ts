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
import type { SamplingOverrides } from "../core/types.ts";

/** Sampling parameters of a model card, in the library's camelCase; clients map them to their wire names. */
export type SamplingParams = Pick<
  SamplingOverrides,
  "temperature" | "topP" | "topK" | "minP" | "repeatPenalty" | "presencePenalty"
>;

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
  {
    // https://huggingface.co/Qwen/Qwen3-Coder-30B-A3B-Instruct#best-practices (and Qwen3-Coder-480B-A35B-Instruct):
    // temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05. Same values in forge's map.
    family: "Qwen3-Coder Instruct",
    sampling: { temperature: 0.7, topP: 0.8, topK: 20, repeatPenalty: 1.05 },
    names: [
      "qwen3-coder",
      ...["30b", "30b-a3b", "480b", "480b-a35b"].flatMap((size) => [
        `qwen3-coder:${size}`,
        `qwen3-coder:${size}-instruct`,
      ]),
      "qwen3-coder-30b-a3b-instruct",
      "qwen3-coder-480b-a35b-instruct",
    ],
  },
  {
    // https://huggingface.co/Qwen/Qwen3.5-27B and https://huggingface.co/Qwen/Qwen3.5-35B-A3B (thinking mode, general
    // tasks: Temperature=1.0, TopP=0.95, TopK=20, MinP=0, presence_penalty=1.5); the same profile on
    // https://huggingface.co/Qwen/Qwen3.6-35B-A3B. Same values in forge's map. (Qwen3.6-27B's card gives
    // presence_penalty 0 for that profile, so it is not keyed here.)
    family: "Qwen3.5 / Qwen3.6 (thinking)",
    sampling: { temperature: 1.0, topP: 0.95, topK: 20, minP: 0, presencePenalty: 1.5 },
    names: [
      ...["27b", "35b", "35b-a3b"].map((size) => `qwen3.5:${size}`),
      "qwen3.5-27b",
      "qwen3.5-35b-a3b",
      "qwen3.6:35b",
      "qwen3.6:35b-a3b",
      "qwen3.6-35b-a3b",
    ],
  },
  {
    // https://huggingface.co/google/gemma-4-31B-it (and the 26B-A4B, E4B and E2B cards): one profile for
    // every use, temperature=1.0, top_p=0.95, top_k=64. Same values in forge's map.
    family: "Gemma 4 IT",
    sampling: { temperature: 1.0, topP: 0.95, topK: 64 },
    names: [
      "gemma4",
      ...["31b", "26b", "26b-a4b", "e4b", "e2b"].flatMap((size) => [`gemma4:${size}`, `gemma4:${size}-it`]),
      ...["31b", "26b-a4b", "e4b", "e2b"].map((size) => `gemma-4-${size}-it`),
    ],
  },
  {
    // https://huggingface.co/mistralai/Ministral-3-14B-Instruct-2512#recommended-settings (same text on the 3B and
    // 8B cards): "Use a temperature below 0.1 for daily-driver and production environments". The card gives a
    // bound, not a value; 0.05 is forge's choice within it.
    family: "Ministral 3 Instruct 2512",
    sampling: { temperature: 0.05 },
    names: ["3b", "8b", "14b"].flatMap((size) => [
      `ministral-3:${size}-instruct-2512`,
      `ministral-3-${size}-instruct-2512`,
    ]),
  },
  {
    // https://huggingface.co/mistralai/Ministral-3-8B-Reasoning-2512#recommended-settings: "Use a temperature of
    // 0.7 for most environments". Same value in forge's map.
    family: "Ministral 3 8B Reasoning 2512",
    sampling: { temperature: 0.7 },
    names: ["ministral-3:8b-reasoning-2512", "ministral-3-8b-reasoning-2512"],
  },
  {
    // https://huggingface.co/mistralai/Ministral-3-14B-Reasoning-2512#recommended-settings: "Use a temperature of
    // 1.0 for most environments" (the 14B card differs from the 8B one). Same value in forge's map.
    family: "Ministral 3 14B Reasoning 2512",
    sampling: { temperature: 1.0 },
    names: ["ministral-3:14b-reasoning-2512", "ministral-3-14b-reasoning-2512"],
  },
  {
    // https://huggingface.co/mistralai/Mistral-Small-3.2-24B-Instruct-2506#usage: "We recommend using a relatively
    // low temperature, such as temperature=0.15." Same value in forge's map.
    family: "Mistral Small 3.2 Instruct 2506",
    sampling: { temperature: 0.15 },
    names: [
      "mistral-small3.2",
      "mistral-small3.2:24b",
      "mistral-small3.2:24b-instruct-2506",
      "mistral-small-3.2:24b-instruct-2506",
      "mistral-small-3.2-24b-instruct-2506",
    ],
  },
  {
    // https://huggingface.co/mistralai/Devstral-Small-2-24B-Instruct-2512: recommended temperature 0.15. Same value
    // in forge's map. (The first Devstral Small, 2505/2507, has no recommendation on its card.)
    family: "Devstral Small 2 Instruct 2512",
    sampling: { temperature: 0.15 },
    names: [
      "devstral-small-2",
      "devstral-small-2:24b",
      "devstral-small-2:24b-instruct-2512",
      "devstral-small-2-24b-instruct-2512",
    ],
  },
  {
    // https://github.com/openai/gpt-oss#recommended-sampling-parameters: "We recommend sampling with
    // temperature=1.0 and top_p=1.0." (forge's map has no gpt-oss entry.)
    family: "gpt-oss",
    sampling: { temperature: 1.0, topP: 1.0 },
    names: ["gpt-oss", "gpt-oss:20b", "gpt-oss:120b", "gpt-oss-20b", "gpt-oss-120b"],
  },
  // Deliberately absent: Mistral 7B Instruct v0.3, Ministral 8B (2410), the Phi family, Ministral 3 3B Reasoning,
  // the first Devstral Small and Granite 4. Their cards give no sampling recommendation (only greedy demo
  // snippets, or nothing; forge's Granite 4 row cites a third-party tutorial, not IBM's card), so there is
  // nothing to cite.
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

const SAMPLING_KEYS = ["temperature", "topP", "topK", "minP", "repeatPenalty", "presencePenalty"] as const;

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
