/** The OpenAI Responses dialect of the proxy (`POST /v1/responses`). */
import type { Dialect } from "../dialect.ts";
import { renderResponse } from "./render.ts";
import { convertResponses, type ResponseEcho } from "./request.ts";
import { type ResponsesRequest, responsesRequestSchema } from "./schema.ts";
import { ResponseStreamWriter } from "./stream.ts";

/**
 * Responses in and out, always through the guarded path (the backend speaks chat completions).
 * Stateless: a `previous_response_id` is a 400. A tool type the loop cannot serve is skipped.
 */
export const responsesDialect: Dialect<ResponsesRequest, ResponseEcho> = {
  path: "/v1/responses",
  schema: responsesRequestSchema,
  convert: convertResponses,
  render: renderResponse,
  createStreamWriter: (model, echo) => new ResponseStreamWriter(model, echo),
};
