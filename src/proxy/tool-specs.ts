/**
 * Tool definitions from the wire as `ToolSpec`s, cached by their JSON so a client that sends the
 * same tools on every request pays for the JSON Schema → zod conversion once.
 */
import { z } from "zod";
import { type JsonSchema, type ToolSpec, toolSpecFromJsonSchema } from "../core/tools.ts";
import { ProxyErrorKind, ProxyHttpError } from "./errors.ts";

const CACHE_LIMIT = 512;
const cache = new Map<string, ToolSpec>();

/** A wire tool reduced to what the model sees. */
export interface WireTool {
  name: string;
  description: string | undefined;
  parameters: Record<string, unknown> | undefined;
}

/**
 * Build (or reuse) the spec of a wire tool. The JSON Schema is sent to the backend as given; a
 * schema zod cannot express still works, with permissive argument parsing, since the proxy never
 * executes tools. A schema whose type is not `object` is the client's mistake (400, `param`).
 */
export function toolSpecFromWire(tool: WireTool, param: string): ToolSpec {
  const key = `${tool.name}\u0000${tool.description ?? ""}\u0000${JSON.stringify(tool.parameters ?? null)}`;
  const cached = cache.get(key);
  if (cached) return cached;
  const schema: JsonSchema = tool.parameters ?? { type: "object", properties: {} };
  if (schema.type !== undefined && schema.type !== "object") {
    throw new ProxyHttpError(
      400,
      ProxyErrorKind.INVALID_REQUEST,
      `${param}: tool parameters must be a JSON Schema of type "object"`,
      { param },
    );
  }
  let spec: ToolSpec;
  try {
    spec = toolSpecFromJsonSchema(tool.name, tool.description ?? "", schema);
  } catch {
    spec = {
      name: tool.name,
      description: tool.description ?? "",
      parameters: z.looseObject({}),
      jsonSchema: { properties: {}, ...schema, type: "object" },
    };
  }
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(key, spec);
  return spec;
}
