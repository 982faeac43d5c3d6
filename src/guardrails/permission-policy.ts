/**
 * The permission policy: allow and deny rules on tool names and on argument patterns (regexes,
 * globs, or "a path outside the workspace"), and the pure check of one call against them. Deny
 * rules win; with `default: "deny"` a call must also match an allow rule. The proxy answers a
 * denied call with a `[Denied]` tool reply and lets the model choose again (ADR 021).
 */
import { isAbsolute, relative, resolve } from "node:path";
import { z } from "zod";
import type { ToolCall } from "../core/types.ts";

/** How a rule reads an argument's value. */
export const permissionMatchSchema = z.union([
  z
    .object({
      /** A JavaScript regular expression, searched anywhere in the value. */
      regex: z.string().min(1),
      flags: z
        .string()
        .regex(/^[imsu]*$/, "flags: only i, m, s and u")
        .optional(),
    })
    .strict()
    .superRefine((match, context) => {
      try {
        new RegExp(match.regex, match.flags);
      } catch (error) {
        context.addIssue({ code: "custom", path: ["regex"], message: (error as Error).message });
      }
    }),
  /** A glob on the whole value: `*` any run of characters, `?` one character. */
  z.object({ glob: z.string().min(1) }).strict(),
  /** The value is a path outside the workspace (relative paths resolve in it; `~` is the home directory). */
  z.object({ outsideWorkspace: z.literal(true) }).strict(),
]);
export type PermissionMatch = z.output<typeof permissionMatchSchema>;

/** One rule: the tools it covers and, optionally, what one of their arguments must match. */
export const permissionRuleSchema = z
  .object({
    /** Tool names, or globs on them (`*` matches every tool). */
    tools: z.array(z.string().min(1)).min(1),
    /**
     * The argument keys read (the first found is used; a list of strings is read joined by
     * spaces, as Codex's `command` arrays). Absent: every top-level string argument.
     */
    args: z.array(z.string().min(1)).min(1).optional(),
    /** What the argument must match; absent: the rule covers the tool whatever its arguments. */
    match: permissionMatchSchema.optional(),
    /** Said to the model (and logged) when the rule denies a call. */
    reason: z.string().min(1).optional(),
  })
  .strict();
export type PermissionRule = z.output<typeof permissionRuleSchema>;

/** A permission policy, as `forge proxy --permissions <file.json>` reads it. */
export const permissionPolicySchema = z
  .object({
    /** What happens to a call no rule covers: `allow` (default), or `deny` (allow-list only). */
    default: z.enum(["allow", "deny"]).default("allow"),
    /** The workspace `outsideWorkspace` checks against; default: the proxy's working directory. */
    workspace: z.string().min(1).optional(),
    deny: z.array(permissionRuleSchema).default([]),
    allow: z.array(permissionRuleSchema).default([]),
  })
  .strict();
export type PermissionPolicy = z.output<typeof permissionPolicySchema>;
/** A policy as written (defaults left out). */
export type PermissionPolicyInput = z.input<typeof permissionPolicySchema>;

/** Where paths are resolved: the workspace and the home directory (for `~`). */
export interface PermissionPlaces {
  workspace: string;
  home: string;
}

/** The verdict on one call. */
export type PermissionVerdict = { allowed: true } | { allowed: false; reason: string };

/**
 * Check `call` against `policy`: denied when a deny rule matches it, or when the default is
 * `deny` and no allow rule does; allowed otherwise. Pure.
 * @example
 * checkPermission({ tool: "Bash", args: { command: "rm -rf /" } }, policy, { workspace: "/repo", home: "/home/me" });
 */
export function checkPermission(
  call: Pick<ToolCall, "tool" | "args">,
  policy: PermissionPolicy,
  places: PermissionPlaces,
): PermissionVerdict {
  const denied = policy.deny.find((rule) => ruleMatches(rule, call, places));
  if (denied) return { allowed: false, reason: denied.reason ?? describeRule(denied) };
  if (policy.default === "allow") return { allowed: true };
  if (policy.allow.some((rule) => ruleMatches(rule, call, places))) return { allowed: true };
  return { allowed: false, reason: `'${call.tool}' is not on the allow list` };
}

/** Whether `rule` covers `call`: a tool name it lists, and its match on an argument, if it has one. */
export function ruleMatches(
  rule: PermissionRule,
  call: Pick<ToolCall, "tool" | "args">,
  places: PermissionPlaces,
): boolean {
  if (!rule.tools.some((pattern) => globMatches(pattern, call.tool))) return false;
  const { match } = rule;
  if (match === undefined) return true;
  return argumentValues(call.args, rule.args).some((value) => valueMatches(match, value, places));
}

/** Whether a glob (`*`, `?`) matches the whole of `value`. */
export function globMatches(glob: string, value: string): boolean {
  const source = glob
    .split("")
    .map((char) =>
      char === "*" ? "[\\s\\S]*" : char === "?" ? "[\\s\\S]" : char.replace(/[.+^${}()|[\]\\]/g, "\\$&"),
    )
    .join("");
  return new RegExp(`^${source}$`).test(value);
}

/** Whether `path` lies outside `places.workspace` (relative paths resolve in it, `~` at home). */
export function isOutsideWorkspace(path: string, places: PermissionPlaces): boolean {
  const trimmed = path.trim();
  if (trimmed.length === 0) return false;
  const expanded =
    trimmed === "~" || trimmed.startsWith("~/") ? `${places.home}${trimmed.slice(1)}` : trimmed;
  const target = resolve(places.workspace, expanded);
  const within = relative(resolve(places.workspace), target);
  return within === ".." || within.startsWith("../") || within.startsWith("..\\") || isAbsolute(within);
}

function valueMatches(match: PermissionMatch, value: string, places: PermissionPlaces): boolean {
  if ("regex" in match) return new RegExp(match.regex, match.flags).test(value);
  if ("glob" in match) return globMatches(match.glob, value);
  return isOutsideWorkspace(value, places);
}

/** The values a rule reads: the first of its keys present, else every top-level string. */
function argumentValues(args: Record<string, unknown>, keys: readonly string[] | undefined): string[] {
  if (keys === undefined) return Object.values(args).flatMap((value) => textOf(value) ?? []);
  for (const key of keys) {
    const text = textOf(args[key]);
    if (text !== null) return [text];
  }
  return [];
}

function textOf(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return value.join(" ");
  return null;
}

function describeRule(rule: PermissionRule): string {
  return rule.match === undefined
    ? `the permission policy denies '${rule.tools.join("', '")}'`
    : "the permission policy denies this call's arguments";
}
