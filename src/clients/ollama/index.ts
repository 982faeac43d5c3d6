/** The Ollama client (`/api/chat`), and which models Ollama thinks with. */
export { OllamaClient, type OllamaClientOptions } from "./client.ts";
export { isKnownThinkingModel } from "./wire.ts";
