/**
 * Reasoning a model wrote inside its answer: `<think>…</think>` (Qwen3, DeepSeek-R1) and
 * `[THINK]…[/THINK]` (Mistral reasoning models), split from the answer proper.
 */

/** A model's output split into its reasoning and its answer. */
export interface SplitReasoning {
  /** The reasoning, trimmed; `null` when there was none. */
  reasoning: string | null;
  /** The output without the reasoning, trimmed. */
  answer: string;
}

const TAG_PAIRS: readonly (readonly [open: string, close: string])[] = [
  ["<think>", "</think>"],
  ["[THINK]", "[/THINK]"],
];

/**
 * Split reasoning tags out of `content`. Handles closed blocks, a close tag whose open tag was in
 * the chat template (everything before it is reasoning), and an unclosed block (the output was cut
 * off mid-thought: the rest is reasoning).
 * @example
 * splitReasoning("<think>Paris is in France.</think>It is sunny.") // { reasoning: "Paris is in France.", answer: "It is sunny." }
 */
export function splitReasoning(content: string): SplitReasoning {
  const thoughts: string[] = [];
  let answer = content;
  for (const [open, close] of TAG_PAIRS) {
    answer = takeBlocks(answer, open, close, thoughts);
  }
  const reasoning = thoughts
    .map((thought) => thought.trim())
    .filter((thought) => thought.length > 0)
    .join("\n\n");
  return { reasoning: reasoning.length > 0 ? reasoning : null, answer: answer.trim() };
}

function takeBlocks(text: string, open: string, close: string, thoughts: string[]): string {
  let rest = text;
  const firstClose = rest.indexOf(close);
  const firstOpen = rest.indexOf(open);
  if (firstClose !== -1 && (firstOpen === -1 || firstOpen > firstClose)) {
    thoughts.push(rest.slice(0, firstClose));
    rest = rest.slice(firstClose + close.length);
  }
  let answer = "";
  while (true) {
    const start = rest.indexOf(open);
    if (start === -1) return answer + rest;
    answer += rest.slice(0, start);
    const end = rest.indexOf(close, start + open.length);
    if (end === -1) {
      thoughts.push(rest.slice(start + open.length));
      return answer;
    }
    thoughts.push(rest.slice(start + open.length, end));
    rest = rest.slice(end + close.length);
  }
}

/**
 * The reasoning and answer of one response. A server-side reasoning field (`reasoning_content`,
 * Ollama's `thinking`) wins over tags in the content; `think === false` discards the reasoning.
 */
export function resolveReasoning(
  serverReasoning: string | null | undefined,
  content: string,
  think: boolean | undefined,
): SplitReasoning {
  const split = splitReasoning(content);
  if (think === false) return { reasoning: null, answer: split.answer };
  const fromServer = serverReasoning?.trim() ?? "";
  return { reasoning: fromServer.length > 0 ? fromServer : split.reasoning, answer: split.answer };
}
