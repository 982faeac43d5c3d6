/**
 * The backend settings a batch runs with (sampling, request seed, llama-cpp mode and threads):
 * recorded in every row, checked when a batch is resumed, and shown in the Markdown report.
 */
import { z } from "zod";

/** What a run was sampled with; `null` means the backend's (or the client's) own default. */
export const backendSettingsSchema = z.object({
  temperature: z.number().nullable(),
  topP: z.number().nullable(),
  topK: z.number().nullable(),
  /** The run's `seed` (base seed + run index) went with every request as the request seed. */
  requestSeed: z.boolean(),
  /** llama-cpp only: native function calling or free text the loop rescues. */
  llamaCppMode: z.enum(["functions", "free"]).nullable(),
  /** llama-cpp only: evaluation threads; `null` there means LlamaCppClient's default (one per core). */
  threads: z.number().nullable(),
  /**
   * `--tool-mode`: native function calling (`tools` in the body), prompt-injected tools (the tool
   * prompt in the system message), or `auto` (native, prompt once the server rejects `tools`).
   * `null`: the backend has no such choice. Absent in rows written before it was recorded (auto).
   */
  toolMode: z.enum(["native", "prompt", "auto"]).nullable().optional(),
  /** `--think`: reasoning on, off, or the client's own choice. `null`: the backend has no such switch. */
  think: z.enum(["on", "off", "auto"]).nullable().optional(),
  /**
   * `llamaserver` when the runs went to a llama-server a batch config's `llamaserver` target
   * started (the rows' backend is `openai-compatible`, the protocol); absent otherwise.
   */
  managedServer: z.literal("llamaserver").optional(),
  /** That server's budget mode (`backend`, `manual`, `forge-full`, `forge-fast`): how its `-c` was chosen. */
  budgetMode: z.enum(["backend", "manual", "forge-full", "forge-fast"]).optional(),
  /** That server's context size (`n_ctx` from `/props` once the budget was resolved); not compared on resume. */
  contextTokens: z.number().optional(),
});
export type BackendSettings = z.infer<typeof backendSettingsSchema>;

// contextTokens is measured (forge-full sizes it from free memory), not chosen: not compared.
const SETTING_KEYS = (Object.keys(backendSettingsSchema.shape) as (keyof BackendSettings)[]).filter(
  (key) => key !== "contextTokens",
);

/**
 * The settings in words, for report headers and the batch's first line.
 * @example
 * describeSettings({ temperature: 0.2, topP: null, topK: null, requestSeed: true, llamaCppMode: null, threads: null })
 * // "temperature 0.2 (top-p, top-k: backend default); request seed = base seed + run index"
 */
export function describeSettings(settings: BackendSettings): string {
  const sampling = [
    ["temperature", settings.temperature],
    ["top-p", settings.topP],
    ["top-k", settings.topK],
  ] as const;
  const given = sampling.filter(([, value]) => value !== null).map(([name, value]) => `${name} ${value}`);
  const defaults = sampling.filter(([, value]) => value === null).map(([name]) => name);
  const parts = [
    given.length === 0
      ? "the backend's default sampling"
      : `${given.join(", ")}${defaults.length > 0 ? ` (${defaults.join(", ")}: backend default)` : ""}`,
    settings.requestSeed ? "request seed = base seed + run index" : "no request seed",
  ];
  if (settings.toolMode) parts.push(`tool mode ${settings.toolMode}`);
  if (settings.think) parts.push(`think ${settings.think}`);
  if (settings.managedServer) {
    parts.push(
      `llama-server started by the batch, budget ${settings.budgetMode ?? "backend"}${
        settings.contextTokens !== undefined ? `, n_ctx ${settings.contextTokens}` : ""
      }`,
    );
  }
  if (settings.llamaCppMode !== null) {
    const threads =
      settings.threads === null ? "default threads (one per core)" : `${settings.threads} threads`;
    parts.push(`llama-cpp mode ${settings.llamaCppMode}, ${threads}`);
  }
  return parts.join("; ");
}

/** Whether two rows were made with the same settings; a field one of them predates is not compared. */
export function sameSettings(first: BackendSettings, second: BackendSettings): boolean {
  return SETTING_KEYS.every(
    (key) => first[key] === undefined || second[key] === undefined || first[key] === second[key],
  );
}

/**
 * Why a resumed file cannot take this batch's rows: the first planned run it already holds that
 * was made with other settings, described; `null` when there is none. Rows written before
 * settings were recorded carry none and are not checked.
 */
export function settingsConflict(
  recorded: ReadonlyMap<string, BackendSettings>,
  plannedKeys: Iterable<string>,
  settings: BackendSettings,
): string | null {
  for (const key of plannedKeys) {
    const previous = recorded.get(key);
    if (previous && !sameSettings(previous, settings)) {
      return `${key} ran with ${describeSettings(previous)}; this batch uses ${describeSettings(settings)}`;
    }
  }
  return null;
}
