/**
 * Per-call sampling (`SendOptions.sampling`) merged over a client's configured sampling.
 */
import type { SamplingOverrides } from "../core/types.ts";

/**
 * `configured` with every value `overrides` gives (an `undefined` one keeps the configured value).
 * @example
 * withSamplingOverrides({ temperature: 0.7, topP: 0.8 }, { temperature: 0 }); // { temperature: 0, topP: 0.8 }
 */
export function withSamplingOverrides(
  configured: Readonly<SamplingOverrides>,
  overrides: Readonly<SamplingOverrides> | undefined,
): SamplingOverrides {
  const merged: SamplingOverrides = { ...configured };
  if (overrides === undefined) return merged;
  for (const key of Object.keys(overrides) as (keyof SamplingOverrides)[]) {
    const value = overrides[key];
    if (value !== undefined) merged[key] = value;
  }
  return merged;
}

/**
 * `sampling` as OpenAI-compatible body fields, in llama-server's names (`top_p`, `min_p`,
 * `repeat_penalty`, `max_tokens`, …); fields left out are not sent.
 */
export function openAISamplingFields(sampling: Readonly<SamplingOverrides>): Record<string, number> {
  const fields: Record<string, number> = {};
  for (const [key, wireName] of OPENAI_SAMPLING_NAMES) {
    const value = sampling[key];
    if (value !== undefined) fields[wireName] = value;
  }
  return fields;
}

const OPENAI_SAMPLING_NAMES: readonly (readonly [keyof SamplingOverrides, string])[] = [
  ["temperature", "temperature"],
  ["topP", "top_p"],
  ["topK", "top_k"],
  ["minP", "min_p"],
  ["repeatPenalty", "repeat_penalty"],
  ["presencePenalty", "presence_penalty"],
  ["maxTokens", "max_tokens"],
  ["seed", "seed"],
];
