/**
 * What a llama-server is started with, as a zod schema, and the pure functions over it: the
 * command line it becomes and whether two configurations are the same server.
 */
import { z } from "zod";

/** KV-cache data types llama-server accepts for `--cache-type-k` / `--cache-type-v`. */
export const KV_CACHE_TYPES = [
  "f32",
  "f16",
  "bf16",
  "q8_0",
  "q4_0",
  "q4_1",
  "iq4_nl",
  "q5_0",
  "q5_1",
] as const;
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];

/** A launch configuration. `ggufPath` is required for llama-server, `model` names it for Ollama. */
export const launchConfigSchema = z.strictObject({
  /** The GGUF file llama-server loads (`--model`). */
  ggufPath: z.string().min(1).optional(),
  /** Ollama's model name; for llama-server, the alias it reports (`--alias`). */
  model: z.string().min(1).optional(),
  /** Context size (`-c`); unset lets llama-server fit it to memory. */
  ctx: z.number().int().positive().optional(),
  /** Jinja chat templates, needed for native tool calling (`--jinja` / `--no-jinja`). */
  jinja: z.boolean().default(true),
  /** Layers to offload to the GPU (`--gpu-layers`). */
  gpuLayers: z.union([z.number().int().nonnegative(), z.enum(["auto", "all"])]).optional(),
  /** Parallel slots (`--parallel`), one KV-cache slot per concurrent conversation. */
  slots: z.number().int().positive().optional(),
  cacheTypeK: z.enum(KV_CACHE_TYPES).optional(),
  cacheTypeV: z.enum(KV_CACHE_TYPES).optional(),
  /** One KV buffer shared by all slots (`--kv-unified` / `--no-kv-unified`). */
  kvUnified: z.boolean().optional(),
  /** CPU threads (`--threads`). */
  threads: z.number().int().positive().optional(),
  /** Passed through after the flags above. */
  extraFlags: z.array(z.string()).default([]),
});

/** A launch configuration as given (defaults optional). */
export type LaunchOptions = z.input<typeof launchConfigSchema>;
/** A launch configuration with its defaults filled in. */
export type LaunchConfig = z.output<typeof launchConfigSchema>;

/** Where the server listens. */
export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * The llama-server command line for a configuration.
 * @example
 * buildLlamaServerArgs({ ggufPath: "m.gguf", jinja: true, ctx: 2048, extraFlags: [] }, { host: "127.0.0.1", port: 8080 })
 * // ["--model", "m.gguf", "--host", "127.0.0.1", "--port", "8080", "--jinja", "--ctx-size", "2048"]
 */
export function buildLlamaServerArgs(config: LaunchConfig, address: ListenAddress): string[] {
  if (!config.ggufPath) throw new TypeError("buildLlamaServerArgs: llama-server needs ggufPath.");
  const args = ["--model", config.ggufPath, "--host", address.host, "--port", String(address.port)];
  args.push(config.jinja ? "--jinja" : "--no-jinja");
  if (config.model !== undefined) args.push("--alias", config.model);
  if (config.ctx !== undefined) args.push("--ctx-size", String(config.ctx));
  if (config.gpuLayers !== undefined) args.push("--gpu-layers", String(config.gpuLayers));
  if (config.slots !== undefined) args.push("--parallel", String(config.slots));
  if (config.cacheTypeK !== undefined) args.push("--cache-type-k", config.cacheTypeK);
  if (config.cacheTypeV !== undefined) args.push("--cache-type-v", config.cacheTypeV);
  if (config.kvUnified !== undefined) args.push(config.kvUnified ? "--kv-unified" : "--no-kv-unified");
  if (config.threads !== undefined) args.push("--threads", String(config.threads));
  args.push(...config.extraFlags);
  return args;
}

/** Whether two configurations start the same server (so a running one can be reused). */
export function sameLaunchConfig(left: LaunchConfig, right: LaunchConfig): boolean {
  return JSON.stringify(canonical(left)) === JSON.stringify(canonical(right));
}

function canonical(config: LaunchConfig): [string, unknown][] {
  return Object.entries(config)
    .filter(([, value]) => value !== undefined)
    .sort(([left], [right]) => left.localeCompare(right));
}
