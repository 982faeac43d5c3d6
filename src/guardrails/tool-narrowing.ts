/**
 * Tool-set narrowing (docs/decisions/028-tool-set-narrowing.md): a request that offers more tools
 * than a small model can choose among is sent with only the most relevant ones. Relevance is BM25
 * (MiniSearch's BM25+) of each tool's name, description and parameter names against the latest
 * user turn and the calls made since it. Pure: the proxy decides what goes upstream from this;
 * a call to a tool left out is still accepted there (it is validated against the full set).
 */
import MiniSearch from "minisearch";
import { z } from "zod";
import { type Message, MessageRole } from "../core/messages.ts";
import { type ToolSpec, toolJsonSchema } from "../core/tools.ts";

/** The rules of narrowing: how many tools the ranking fills, and the ones always offered. */
export const toolNarrowingRulesSchema = z.object({
  /** Ranked tools offered (K); a request with no more tools than this (besides `alwaysOffer`) is sent whole. */
  maxTools: z.number().int().min(1),
  /** Tools offered whenever the request has them, on top of the `maxTools` ranked ones. */
  alwaysOffer: z.array(z.string().min(1)).default([]),
});
export type ToolNarrowingRules = z.output<typeof toolNarrowingRulesSchema>;

/** What narrowing chose for one request. */
export interface NarrowedTools {
  /** The tools to send, in the request's order. */
  offered: string[];
  /** How many tools the request had. */
  total: number;
}

/** Tools called since the latest user turn that keep their place ahead of the ranking. */
const RECENT_CALLS_KEPT = 3;
/** A tool's name weighs more than its description: it is what the model writes. */
const FIELD_BOOST = { name: 2, description: 1, parameters: 1 };
/** Words too common to tell tools apart. */
const STOP_WORDS: ReadonlySet<string> = new Set(
  "a an and are as at be by for from get has have i in is it me my of on or please set that the this to use what with you your".split(
    " ",
  ),
);

/**
 * The tools to offer for `messages`, or null when the request is sent whole (no more than
 * `maxTools` tools besides the always-offered ones). Offered: `rules.alwaysOffer` and `pinned`
 * (a tool the client forces, the proxy's own `respond`) when present, then up to `maxTools`
 * others: first the tools called since the latest user turn (the last three), then the best BM25
 * matches of the user turn and those calls, then the request's order for tools that match nothing.
 * @example
 * narrowTools(sixtyTools, history, { maxTools: 8, alwaysOffer: ["Bash"] })
 * // { offered: ["Bash", "get_weather", …], total: 60 }
 */
export function narrowTools(
  tools: readonly ToolSpec[],
  messages: readonly Message[],
  rules: ToolNarrowingRules,
  pinned: readonly string[] = [],
): NarrowedTools | null {
  const kept = new Set([...rules.alwaysOffer, ...pinned]);
  const candidates = tools.filter((tool) => !kept.has(tool.name));
  if (candidates.length <= rules.maxTools) return null;
  const { text, called } = narrowingQuery(messages);
  const chosen = new Set<string>();
  const names = new Set(candidates.map((tool) => tool.name));
  for (const name of called) if (names.has(name) && chosen.size < rules.maxTools) chosen.add(name);
  for (const name of rankTools(candidates, text)) {
    if (chosen.size >= rules.maxTools) break;
    chosen.add(name);
  }
  const offered = tools
    .filter((tool) => kept.has(tool.name) || chosen.has(tool.name))
    .map((tool) => tool.name);
  return { offered, total: tools.length };
}

/**
 * Every tool's name, best match for `query` first (BM25 over name, description and parameter
 * names; names split at `_`, `-`, `.` and camel case); tools that match nothing follow in their
 * order.
 * @example rankTools(tools, "What is the weather in Paris?")[0] // "get_weather"
 */
export function rankTools(tools: readonly ToolSpec[], query: string): string[] {
  const index = new MiniSearch<{ id: number; name: string; description: string; parameters: string }>({
    fields: ["name", "description", "parameters"],
    tokenize: splitWords,
    processTerm: normalizeTerm,
    searchOptions: { boost: FIELD_BOOST, combineWith: "OR" },
  });
  index.addAll(
    tools.map((tool, id) => ({
      id,
      name: tool.name,
      description: tool.description,
      parameters: parameterNames(tool).join(" "),
    })),
  );
  const ranked = index.search(query).map((result) => result.id as number);
  const seen = new Set(ranked);
  const rest = tools.map((_, id) => id).filter((id) => !seen.has(id));
  return [...ranked, ...rest].map((id) => (tools[id] as ToolSpec).name);
}

/**
 * What narrowing ranks by: the text of the latest user turn and of the calls made since (tool
 * names and string argument values), and those calls' tools, latest first.
 */
export function narrowingQuery(messages: readonly Message[]): { text: string; called: string[] } {
  const start = messages.findLastIndex((message) => message.role === MessageRole.USER);
  const parts: string[] = [];
  if (start !== -1) parts.push((messages[start] as Message).content);
  const called: string[] = [];
  for (const message of messages.slice(start + 1)) {
    for (const call of message.toolCalls ?? []) {
      parts.push(call.name, ...Object.values(call.args).filter((value) => typeof value === "string"));
      called.unshift(call.name);
    }
  }
  const recent = [...new Set(called)].slice(0, RECENT_CALLS_KEPT);
  return { text: parts.join("\n"), called: recent };
}

/** A tool's parameter names, nested objects' too. */
function parameterNames(tool: ToolSpec): string[] {
  const names: string[] = [];
  const visit = (schema: unknown, depth: number): void => {
    if (depth > 3 || typeof schema !== "object" || schema === null) return;
    const properties = (schema as { properties?: unknown }).properties;
    if (typeof properties !== "object" || properties === null) return;
    for (const [name, child] of Object.entries(properties)) {
      names.push(name);
      visit(child, depth + 1);
    }
  };
  visit(toolJsonSchema(tool), 0);
  return names;
}

/** Words of `text`: split at anything not a letter or digit, and at camel-case humps. */
function splitWords(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0);
}

/** Lower case, no stop words, a plural's `s` dropped (`files` matches `file`). */
function normalizeTerm(term: string): string | null {
  const lower = term.toLowerCase();
  if (STOP_WORDS.has(lower)) return null;
  if (lower.length > 3 && lower.endsWith("s") && !lower.endsWith("ss")) return lower.slice(0, -1);
  return lower;
}
