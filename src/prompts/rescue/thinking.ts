/**
 * Drop a model's reasoning before rescue, so calls it only considered are not run: `<think>…</think>`
 * (Qwen3, DeepSeek-R1, gpt-oss templates), `[THINK]…[/THINK]` (Magistral, Ministral Reasoning) and
 * gpt-oss's harmony analysis messages (`<|channel|>analysis<|message|>…<|end|>`).
 */

/** gpt-oss's reasoning: an analysis-channel message, up to its `<|end|>` (or the end, cut off). */
const HARMONY_ANALYSIS = /<\|channel\|>analysis<\|message\|>[\s\S]*?(?:<\|end\|>|$)/g;

/** The reasoning tag pairs, each stripped by the same rules. */
const TAG_PAIRS: readonly { open: string; close: string; block: RegExp }[] = [
  { open: "<think>", close: "</think>", block: /<think>[\s\S]*?<\/think>/g },
  { open: "[THINK]", close: "[/THINK]", block: /\[THINK\][\s\S]*?\[\/THINK\]/g },
];

/**
 * The part of `text` the model meant as its answer. For each tag pair: closed blocks removed,
 * everything up to a close tag whose opening tag came from the chat template removed, and an
 * unclosed open tag (the output was cut off mid-thought) dropped to the end.
 * @example
 * stripThinking('<think>maybe {"tool": "a"}?</think>{"tool": "b", "args": {}}') // '{"tool": "b", "args": {}}'
 * stripThinking('[THINK]read first[/THINK][TOOL_CALLS]read{"path": "x"}') // '[TOOL_CALLS]read{"path": "x"}'
 */
export function stripThinking(text: string): string {
  // A harmony analysis message: a call in that channel has its recipient before <|message|>.
  let answer = text.replace(HARMONY_ANALYSIS, "");
  for (const { open, close, block } of TAG_PAIRS) {
    const firstClose = answer.indexOf(close);
    const firstOpen = answer.indexOf(open);
    // A close with no open before it: the chat template opened the block inside the prompt.
    const templateOpened = firstClose !== -1 && (firstOpen === -1 || firstOpen > firstClose);
    if (templateOpened) answer = answer.slice(firstClose + close.length);
    answer = answer.replace(block, "");
    const unclosed = answer.indexOf(open);
    if (unclosed !== -1) answer = answer.slice(0, unclosed);
  }
  return answer;
}
