/**
 * The `forge proxy` options as a zod schema: commander hands over strings, the schema coerces,
 * checks and defaults them, and names the flag at fault.
 */
import { z } from "zod";

/** The fields of `forge proxy`'s options, before the backend choice is checked. */
export const proxyCliOptionsObject = z.object({
  backendUrl: z.url({ protocol: /^https?$/ }).optional(),
  backend: z.enum(["llamaserver"]).optional(),
  gguf: z.string().min(1).optional(),
  backendFormat: z.enum(["openai", "ollama", "anthropic"]).default("openai"),
  backendApiKey: z.string().min(1).optional(),
  apiKey: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  host: z.string().min(1).default("127.0.0.1"),
  allowHost: z.array(z.string().min(1)).default([]),
  logFormat: z.enum(["text", "json"]).default("text"),
  quiet: z.boolean().default(false),
  port: z.coerce.number().int().min(0).max(65_535).default(8081),
  maxRetries: z.coerce.number().int().min(0).max(20).default(3),
  rescue: z.boolean().default(true),
  reasoningReplay: z.enum(["full", "keep-last", "none"]).default("none"),
  serialize: z.boolean().default(false),
  maxBodyBytes: z.coerce
    .number()
    .int()
    .positive()
    .default(10 * 1024 * 1024),
  timeout: z.coerce.number().int().positive().default(600_000),
  idleTimeout: z.coerce.number().int().min(0).default(300_000),
  deadline: z.coerce.number().int().min(0).default(0),
  maxResponseBytes: z.coerce
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024),
  maxInFlight: z.coerce.number().int().positive().default(64),
  maxQueue: z.coerce.number().int().min(0).default(256),
  maxBodyMemory: z.coerce
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024),
  reclaimAfter: z.coerce
    .number()
    .int()
    .min(0)
    .default(16 * 1024 * 1024),
  maxJsonDepth: z.coerce.number().int().positive().default(64),
  drainTimeout: z.coerce.number().int().min(0).default(30_000),
  budgetTokens: z.coerce.number().int().positive().optional(),
  toolMode: z.enum(["native", "prompt", "auto"]).default("auto"),
  watch: z.url({ protocol: /^https?$/ }).optional(),
  backendPort: z.coerce.number().int().min(1).max(65_535).optional(),
  ctx: z.coerce.number().int().positive().optional(),
  slots: z.coerce.number().int().positive().optional(),
  maxRestarts: z.coerce.number().int().min(0).default(5),
  restartWindow: z.coerce.number().int().positive().default(600_000),
  restartBackoff: z.coerce.number().int().min(0).default(500),
  probeInterval: z.coerce.number().int().min(0).default(10_000),
  probeTimeout: z.coerce.number().int().positive().default(5_000),
  probeFailures: z.coerce.number().int().positive().default(3),
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
