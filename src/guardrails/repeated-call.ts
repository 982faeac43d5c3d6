/**
 * The repeated-call check: a small model that has what it needs often calls the same lookup again
 * and again with the same arguments instead of moving on (Qwen2.5-Coder 0.5B on the demo's
 * workflow calls `get_weather({"city":"Paris"})` until `maxIterations`). The call still runs — a
 * repeated call may be legitimate (polling) — but its result carries a note that names what to do
 * next: the pending required steps, else the terminal tool.
 */
import { repeatedCallNudge } from "../prompts/nudges.ts";

/** A call as the check compares it: its tool and its arguments. */
export interface ComparedCall {
  tool: string;
  args: Record<string, unknown>;
}

/** Same tool, same arguments (key order ignored). */
export function isSameCall(first: ComparedCall, second: ComparedCall): boolean {
  return first.tool === second.tool && canonicalJson(first.args) === canonicalJson(second.args);
}

/**
 * The note for `call` when it repeats a call of the previous batch with the same arguments and is
 * not a terminal tool; null otherwise. `pending`: required steps not yet done after this batch.
 */
export function repeatedCallNote(
  call: ComparedCall,
  previousBatch: readonly ComparedCall[],
  rules: { terminalTools: readonly string[] },
  pending: readonly string[],
): string | null {
  if (rules.terminalTools.includes(call.tool)) return null;
  if (!previousBatch.some((previous) => isSameCall(previous, call))) return null;
  const next = pending.filter((step) => step !== call.tool);
  return repeatedCallNudge(call.tool, next.length > 0 ? next : rules.terminalTools, next.length > 0);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
