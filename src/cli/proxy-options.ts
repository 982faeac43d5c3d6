/**
 * The `forge proxy` options as a zod schema: commander hands over strings, the schema coerces,
 * checks and defaults them, and names the flag at fault. Every default is the library's own
 * (`PROXY_DEFAULTS`, `DEFAULT_SUPERVISION`), imported rather than typed again.
 */
import { z } from "zod";
import { PROXY_DEFAULTS } from "../proxy/index.ts";
import { DEFAULT_SUPERVISION } from "../server/index.ts";

/** The fields of `forge proxy`'s options, before the backend choice is checked. */
export const proxyCliOptionsObject = z.object({
  backendUrl: z.url({ protocol: /^https?$/ }).optional(),
  backend: z.enum(["llamaserver"]).optional(),
  gguf: z.string().min(1).optional(),
  backendFormat: z.enum(["openai", "ollama", "anthropic"]).default("openai"),
  backendApiKey: z.string().min(1).optional(),
  apiKey: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  host: z.string().min(1).default(PROXY_DEFAULTS.host),
  allowHost: z.array(z.string().min(1)).default([]),
  logFormat: z.enum(["text", "json"]).default("text"),
  quiet: z.boolean().default(false),
  port: z.coerce.number().int().min(0).max(65_535).default(PROXY_DEFAULTS.port),
  maxRetries: z.coerce.number().int().min(0).max(20).default(PROXY_DEFAULTS.maxRetries),
  rescue: z.boolean().default(true),
  prosePolicy: z.enum(["answer", "nudge"]).default("answer"),
  followUpMaxCalls: z.coerce.number().int().min(1).max(64).default(1),
  callConfidence: z.coerce.number().gt(0).max(1).optional(),
  groundedCalls: z.boolean().default(false),
  respondUpstream: z.boolean().default(true),
  chatTemplate: z.string().min(1).default("auto"),
  reasoningReplay: z.enum(["full", "keep-last", "none"]).default("none"),
  serialize: z.boolean().default(false),
  maxBodyBytes: z.coerce.number().int().positive().default(PROXY_DEFAULTS.maxBodyBytes),
  timeout: z.coerce.number().int().positive().default(PROXY_DEFAULTS.timeoutMs),
  idleTimeout: z.coerce.number().int().min(0).default(PROXY_DEFAULTS.idleTimeoutMs),
  deadline: z.coerce.number().int().min(0).default(0),
  maxResponseBytes: z.coerce.number().int().positive().default(PROXY_DEFAULTS.maxResponseBytes),
  maxInFlight: z.coerce.number().int().positive().default(PROXY_DEFAULTS.maxInFlight),
  maxQueue: z.coerce.number().int().min(0).default(PROXY_DEFAULTS.maxQueue),
  maxBodyMemory: z.coerce.number().int().positive().default(PROXY_DEFAULTS.maxBodyMemoryBytes),
  reclaimAfter: z.coerce.number().int().min(0).default(PROXY_DEFAULTS.reclaimAfterBytes),
  maxJsonDepth: z.coerce.number().int().positive().default(PROXY_DEFAULTS.maxJsonDepth),
  drainTimeout: z.coerce.number().int().min(0).default(PROXY_DEFAULTS.drainTimeoutMs),
  loopGuard: z.boolean().default(true),
  loopThreshold: z.coerce.number().int().min(2).default(PROXY_DEFAULTS.loopThreshold),
  loopExempt: z.array(z.string().min(1)).default([]),
  permissions: z.string().min(1).optional(),
  retryBounds: z.boolean().default(true),
  retryFactor: z.coerce.number().positive().default(PROXY_DEFAULTS.retryFactor),
  retryFloor: z.coerce.number().int().positive().default(PROXY_DEFAULTS.retryFloorTokens),
  thinkCalls: z.boolean().default(false),
  narrowTools: z.coerce.number().int().min(1).optional(),
  alwaysOffer: z.array(z.string().min(1)).default([]),
  budgetTokens: z.coerce.number().int().positive().optional(),
  toolMode: z.enum(["native", "prompt", "auto"]).default("auto"),
  watch: z.url({ protocol: /^https?$/ }).optional(),
  otelEndpoint: z.url({ protocol: /^https?$/ }).optional(),
  otelRecordContent: z.boolean().default(false),
  backendPort: z.coerce.number().int().min(1).max(65_535).optional(),
  ctx: z.coerce.number().int().positive().optional(),
  slots: z.coerce.number().int().positive().optional(),
  maxRestarts: z.coerce.number().int().min(0).default(DEFAULT_SUPERVISION.maxRestarts),
  restartWindow: z.coerce.number().int().positive().default(DEFAULT_SUPERVISION.windowMs),
  restartBackoff: z.coerce.number().int().min(0).default(DEFAULT_SUPERVISION.backoffMs),
  probeInterval: z.coerce.number().int().min(0).default(DEFAULT_SUPERVISION.probeIntervalMs),
  probeTimeout: z.coerce.number().int().positive().default(DEFAULT_SUPERVISION.probeTimeoutMs),
  probeFailures: z.coerce.number().int().positive().default(DEFAULT_SUPERVISION.probeFailures),
});

/**
 * Exactly one backend: `--backend-url` (external) or `--backend llamaserver --gguf` (managed).
 * Shared by `forge proxy` and `forge launch`.
 */
export function checkBackendChoice(
  options: { backendUrl?: string | undefined; backend?: string | undefined; gguf?: string | undefined },
  context: z.RefinementCtx,
): void {
  if ((options.backendUrl === undefined) === (options.backend === undefined)) {
    context.addIssue({
      code: "custom",
      path: ["backendUrl"],
      message: "give either --backend-url <url> (external) or --backend llamaserver --gguf <path> (managed)",
    });
  }
  if (options.backend === "llamaserver" && options.gguf === undefined) {
    context.addIssue({
      code: "custom",
      path: ["gguf"],
      message: "--backend llamaserver needs --gguf <path>",
    });
  }
}

/** Validated options of `forge proxy`. */
export const proxyCliOptionsSchema = proxyCliOptionsObject.superRefine(checkBackendChoice);
export type ProxyCliOptions = z.output<typeof proxyCliOptionsSchema>;

/** `backendUrl` → `--backend-url`, for error messages. */
export function flagName(key: PropertyKey | undefined): string {
  return key === undefined
    ? "options"
    : `--${String(key).replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
}
