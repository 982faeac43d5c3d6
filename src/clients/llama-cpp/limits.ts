/**
 * The bounds of one in-process generation: how many tool calls one answer may hold and how many
 * tokens it may generate. node-llama-cpp bounds neither by default, and a small model that repeats
 * itself then generates until the context is full (issue 36). Pure.
 */

/**
 * Tokens one answer may generate when neither the client's `maxTokens` nor the call's
 * `SendOptions.sampling.maxTokens` says: a tool call or a short answer fits many times over, and a
 * runaway generation stops in seconds to minutes instead of filling an 8192-token context.
 */
export const DEFAULT_MAX_TOKENS = 1024;

/**
 * The most tool calls one answer may hold (node-llama-cpp's `maxParallelFunctionCalls`;
 * `undefined`: no limit but the token cap). After each call node-llama-cpp takes any token but the
 * end of the turn as the start of another call, so unbounded answers of a small model run on as one
 * call after another. One call per answer, as llama-server keeps `parallel_tool_calls` off, unless
 * the call asks for parallel calls (`parallelToolCalls: true`, the loop's `toolConcurrency` > 1) or
 * the client is configured with `maxParallelToolCalls`; `parallelToolCalls: false` is always one.
 * @example
 * callsPerAnswer(undefined, undefined); // 1
 * callsPerAnswer(undefined, true); // undefined (no limit)
 * callsPerAnswer(3, undefined); // 3
 */
export function callsPerAnswer(
  maxParallelToolCalls: number | undefined,
  parallelToolCalls: boolean | undefined,
): number | undefined {
  if (parallelToolCalls === false) return 1;
  if (maxParallelToolCalls !== undefined) return maxParallelToolCalls;
  return parallelToolCalls === true ? undefined : 1;
}

/** A text answer stops once its last {@link REPEAT_TIMES} stretches of one length are the same. */
export const REPEAT_TIMES = 4;
const REPEAT_MIN_LENGTH = 24;
const REPEAT_MAX_LENGTH = 512;

/**
 * Whether `text` ends with one stretch of 24 to 512 characters written {@link REPEAT_TIMES} times in
 * a row. A small model on greedy decoding that writes a call as text (`{"name": …}`, no call
 * token, so no grammar and no call limit) tends to write it again and again until the token cap;
 * the client stops the answer here and returns the text so far.
 * @example
 * endsRepeating('{"name": "count_stock"} '.repeat(4)); // true
 * endsRepeating("The order has shipped."); // false
 */
export function endsRepeating(text: string): boolean {
  for (let length = REPEAT_MIN_LENGTH; length <= REPEAT_MAX_LENGTH; length += 1) {
    const start = text.length - length * REPEAT_TIMES;
    if (start < 0) return false;
    const unit = text.slice(text.length - length);
    let copies = 1;
    while (copies < REPEAT_TIMES && text.startsWith(unit, text.length - length * (copies + 1))) copies += 1;
    if (copies === REPEAT_TIMES) return true;
  }
  return false;
}
