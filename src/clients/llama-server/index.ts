/** What only llama-server offers beyond the OpenAI wire: its tokenizer endpoint (and `/props`, read by the server manager). */

export { callFormatFromTemplate } from "../../prompts/chat-template.ts";
export { callFormatOfServer } from "./call-format.ts";
export {
  createLlamaServerTokenizer,
  type LlamaServerTokenizerOptions,
  type PromptTokenizer,
} from "./tokenizer.ts";
