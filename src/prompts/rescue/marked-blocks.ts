/**
 * The bodies of the marked blocks in a model's text: `<open>…<close>`, where a block the model
 * stopped before closing runs to the next `<open>` or the end of the text.
 */

/**
 * Each block's body after `open`, in order, untrimmed: up to its `close` (when `close` is
 * non-empty and comes before the next `open`), else to the next `open`, else to the end.
 * @example
 * [...markedBlocks("<a>1</a> x <a>2", "<a>", "</a>")] // ["1", "2"]
 */
export function* markedBlocks(text: string, open: string, close: string): Generator<string> {
  let position = text.indexOf(open);
  while (position !== -1) {
    const bodyStart = position + open.length;
    const nextOpen = text.indexOf(open, bodyStart);
    const closeAt = close.length > 0 ? text.indexOf(close, bodyStart) : -1;
    const bodyEnd = closeAt !== -1 && (nextOpen === -1 || closeAt < nextOpen) ? closeAt : nextOpen;
    yield text.slice(bodyStart, bodyEnd === -1 ? text.length : bodyEnd);
    position = nextOpen;
  }
}
