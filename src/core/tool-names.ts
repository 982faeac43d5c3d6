/**
 * Near-miss tool names: a name a small model got nearly right — another case, `.` or `-` for `_`,
 * a namespace prefix left out or added — is read as the one offered tool it can only mean. One
 * rule, used by the rescue and by the validation of native calls, so the proxy and the loop agree
 * (docs/decisions/019-near-miss-tool-names.md).
 */

/** How a called name was matched to an offered one. */
export type NameMatch = "exact" | "normalized" | "missing_prefix" | "extra_prefix";

/** The offered tool a called name stands for. */
export interface ResolvedToolName {
  name: string;
  match: NameMatch;
}

/** Lower case, every run of `.`, `-`, `_`, `/`, `:` or spaces as one `_`, camelCase split. */
export function normalizeToolName(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[\s._\-/:]+/g, "_")
    .replace(/^_+|_+$/g, "");
}

/**
 * The offered tool `called` stands for, or null when none or several fit.
 *
 * Tried in order, each only when the one before found nothing: the exact name; the same name once
 * normalized (`Get-Weather`, `get.weather`, `getWeather` → `get_weather`); an offered name that is
 * `called` under a namespace (`read_file` → `mcp__fs__read_file`); `called` under a namespace the
 * offered name lacks (`functions.get_weather` → `get_weather`). A namespace ends at `.`, `__`, `:`
 * or `/`, so `weather` is not `get_weather` (a word of the name, not a namespace). Ambiguity is no
 * match.
 * @example resolveToolName("functions.Get_Weather", ["get_weather", "report"]) // { name: "get_weather", match: "extra_prefix" }
 */
export function resolveToolName(called: string, offered: readonly string[]): ResolvedToolName | null {
  if (offered.includes(called)) return { name: called, match: "exact" };
  const target = normalizeToolName(called);
  if (target.length === 0) return null;
  const normalized = offered.filter((name) => normalizeToolName(name) === target);
  if (normalized.length > 0) return only(normalized, "normalized");
  const missing = offered.filter((name) => hasNamespace(name, called));
  if (missing.length > 0) return only(missing, "missing_prefix");
  const extra = offered.filter((name) => hasNamespace(called, name));
  return extra.length > 0 ? only(extra, "extra_prefix") : null;
}

/** Namespace separators: `functions.x`, `mcp__server__x`, `server:x`, `server/x`. */
const NAMESPACE_SEPARATORS = [".", "__", ":", "/"] as const;

/** Whether `full` is `name` under a namespace prefix (case aside, `name`'s separators normalized). */
function hasNamespace(full: string, name: string): boolean {
  const lower = full.toLowerCase();
  const tail = normalizeToolName(name);
  return NAMESPACE_SEPARATORS.some((separator) => {
    const at = lower.lastIndexOf(separator);
    return at > 0 && normalizeToolName(full.slice(at + separator.length)) === tail;
  });
}

function only(names: readonly string[], match: NameMatch): ResolvedToolName | null {
  return names.length === 1 ? { name: names[0] as string, match } : null;
}
