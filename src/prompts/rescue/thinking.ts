/**
 * Drop a model's `<think>…</think>` reasoning before rescue, so calls it only considered are not run.
 */

const THINK_BLOCK = /<think>[\s\S]*?<\/think>/g;
const CLOSE = "</think>";
const OPEN = "<think>";

/**
 * The part of `text` the model meant as its answer: closed `<think>` blocks removed, everything
 * up to a `</think>` whose opening tag came from the chat template removed, and an unclosed
 * `<think>` (the output was cut off mid-thought) dropped to the end.
 * @example
 * stripThinking('<think>maybe {"tool": "a"}?</think>{"tool": "b", "args": {}}') // '{"tool": "b", "args": {}}'
 */
export function stripThinking(text: string): string {
  const firstClose = text.indexOf(CLOSE);
  const firstOpen = text.indexOf(OPEN);
  // A close with no open before it: the chat template opened the block inside the prompt.
  const templateOpened = firstClose !== -1 && (firstOpen === -1 || firstOpen > firstClose);
  let answer = templateOpened ? text.slice(firstClose + CLOSE.length) : text;
  answer = answer.replace(THINK_BLOCK, "");
  const unclosed = answer.indexOf(OPEN);
  return unclosed === -1 ? answer : answer.slice(0, unclosed);
}
