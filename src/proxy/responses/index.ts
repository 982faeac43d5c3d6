/** The OpenAI Responses dialect of the proxy (`POST /v1/responses`): request conversion and rendering. */
export { renderResponse } from "./render.ts";
export { proxyRequestFromResponses, type ResponseEcho, type ResponsesConversion } from "./request.ts";
export { type ResponsesRequest, responsesRequestSchema } from "./schema.ts";
export { ResponseStreamWriter, renderResponseStream } from "./stream.ts";
