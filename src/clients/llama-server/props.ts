/** llama-server's `/props`: its wire schema and the fields the server manager and clients read. */
import { z } from "zod";
import { ContextDiscoveryError } from "../../core/errors.ts";

const positiveInt = z.number().int().positive();

/**
 * The parts of `GET /props` that matter here; other fields pass through untouched. `n_ctx` is
 * under `default_generation_settings` in current llama-server, at the top level in older builds.
 */
export const propsWireSchema = z.looseObject({
  default_generation_settings: z.looseObject({ n_ctx: positiveInt.nullish() }).nullish(),
  n_ctx: positiveInt.nullish(),
  total_slots: positiveInt.nullish(),
  model_path: z.string().nullish(),
  model_alias: z.string().nullish(),
  build_info: z.string().nullish(),
  chat_template: z.string().nullish(),
});

/** What a running llama-server reports about itself. */
export interface ServerProps {
  /** Context per slot (`default_generation_settings.n_ctx`), after llama-server's auto-tuning. */
  nCtx: number;
  totalSlots: number | null;
  modelPath: string | null;
  buildInfo: string | null;
  /** The Jinja chat template the server formats prompts with (the model's own unless overridden). */
  chatTemplate?: string | null;
}

/**
 * Parse a `/props` body.
 * @throws {ContextDiscoveryError} when it is not JSON or has no positive `n_ctx`.
 */
export function parseServerProps(body: string, url: string): ServerProps {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    throw new ContextDiscoveryError(
      `${url} returned malformed JSON (${(error as Error).message}): ${body.slice(0, 200)}`,
    );
  }
  const parsed = propsWireSchema.safeParse(value);
  const nCtx = parsed.success ? (parsed.data.default_generation_settings?.n_ctx ?? parsed.data.n_ctx) : null;
  if (!parsed.success || nCtx == null) {
    throw new ContextDiscoveryError(`${url} did not report a positive n_ctx: ${body.slice(0, 200)}`);
  }
  return {
    nCtx,
    totalSlots: parsed.data.total_slots ?? null,
    modelPath: parsed.data.model_path ?? null,
    buildInfo: parsed.data.build_info ?? null,
    chatTemplate: parsed.data.chat_template ?? null,
  };
}

/**
 * Read `GET <baseUrl>/props`, sending `apiKey` as a Bearer token when given (llama-server started
 * with `--api-key` answers `/props` with 401 otherwise).
 * @throws {ContextDiscoveryError} when the server does not answer 200 with a usable body.
 */
export async function fetchServerProps(
  baseUrl: string,
  signal?: AbortSignal,
  apiKey?: string | null,
): Promise<ServerProps> {
  const url = `${baseUrl}/props`;
  let response: Response;
  try {
    response = await fetch(url, {
      signal: signal ?? AbortSignal.timeout(5_000),
      ...(apiKey && { headers: { authorization: `Bearer ${apiKey}` } }),
    });
  } catch (error) {
    throw new ContextDiscoveryError(`${url} could not be reached: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const body = await response.text();
  if (!response.ok)
    throw new ContextDiscoveryError(`${url} answered HTTP ${response.status}: ${body.slice(0, 200)}`);
  return parseServerProps(body, url);
}
