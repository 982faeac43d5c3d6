/**
 * Append-only JSONL with recovery: rows are appended one write per line; a reader reports each
 * corrupt line by number and keeps the rest; an interrupted last line is cut off before a
 * resumed batch appends.
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  truncateSync,
  writeSync,
} from "node:fs";
import type { z } from "zod";

/** A line that could not be read. */
export interface LineProblem {
  line: number;
  message: string;
}

/** What a JSONL file held. */
export interface JsonlContent<Row> {
  rows: Row[];
  problems: LineProblem[];
}

/**
 * Read every line of a JSONL file with `schema`. Blank lines are skipped; a line that is not
 * JSON or does not fit the schema becomes a problem with its 1-based line number.
 */
export function readJsonl<Schema extends z.ZodType>(
  path: string,
  schema: Schema,
): JsonlContent<z.output<Schema>> {
  const rows: z.output<Schema>[] = [];
  const problems: LineProblem[] = [];
  if (!existsSync(path)) return { rows, problems };
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n");
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === "") return;
    const isLast = index === lines.length - 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      problems.push({
        line: index + 1,
        message: isLast
          ? "incomplete last line (an interrupted write)"
          : `not JSON: ${(error as Error).message}`,
      });
      return;
    }
    const parsed = schema.safeParse(value);
    if (parsed.success) rows.push(parsed.data);
    else
      problems.push({
        line: index + 1,
        message: `not a row: ${parsed.error.issues[0]?.message ?? "invalid"}`,
      });
  });
  return { rows, problems };
}

/**
 * Cut an interrupted last line (one without its newline) off the file, so the next append
 * starts on a fresh line. Returns the number of bytes removed.
 */
export function repairTail(path: string): number {
  if (!existsSync(path)) return 0;
  const size = statSync(path).size;
  if (size === 0) return 0;
  const fd = openSync(path, "r");
  try {
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    if (last.toString() === "\n") return 0;
  } finally {
    closeSync(fd);
  }
  const text = readFileSync(path);
  const cut = text.lastIndexOf(0x0a) + 1;
  truncateSync(path, cut);
  return size - cut;
}

/** Append one JSON value as one line, in a single write. */
export function appendJsonLine(path: string, value: unknown): void {
  appendFileSync(path, `${JSON.stringify(value)}\n`);
}

/** An open JSONL file that values are appended to, one write per line. */
export interface JsonlAppender {
  append(value: unknown): void;
  close(): void;
}

/** Open `path` for appending (created if missing) and keep it open for a batch. */
export function openJsonlAppender(path: string): JsonlAppender {
  const fd = openSync(path, "a");
  return {
    append: (value) => {
      writeSync(fd, `${JSON.stringify(value)}\n`);
    },
    close: () => closeSync(fd),
  };
}

/** The last row per key (a key run twice keeps its newest row) and how many were superseded. */
export function latestByKey<Row extends { key: string }>(
  rows: readonly Row[],
): { rows: Row[]; superseded: number } {
  const byKey = new Map<string, Row>();
  for (const row of rows) byKey.set(row.key, row);
  return { rows: [...byKey.values()], superseded: rows.length - byKey.size };
}
