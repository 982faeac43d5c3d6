/** A server process's output, kept as a bounded tail for error messages. */

/** Keeps the last `maxLines` complete lines written to it (and any unfinished last line). */
export class LogTail {
  readonly maxLines: number;
  readonly #lines: string[] = [];
  #partial = "";

  constructor(maxLines = 40) {
    this.maxLines = maxLines;
  }

  /** Append a chunk; returns the complete lines it finished. */
  push(chunk: string): string[] {
    const parts = (this.#partial + chunk).split(/\r?\n/);
    this.#partial = parts.pop() ?? "";
    for (const line of parts) {
      this.#lines.push(line);
      if (this.#lines.length > this.maxLines) this.#lines.shift();
    }
    return parts;
  }

  /** The kept lines, newline-joined. */
  text(): string {
    return [...this.#lines, ...(this.#partial ? [this.#partial] : [])].slice(-this.maxLines).join("\n");
  }
}
