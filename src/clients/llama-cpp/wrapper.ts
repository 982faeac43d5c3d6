/**
 * Views of a node-llama-cpp chat wrapper that change how one generation starts: forcing a tool call
 * (tool choice "required"), or describing the tools in the prompt without constraining the answer
 * (free mode). The model's own wrapper still renders the history and the call syntax.
 */
import type {
  ChatModelFunctions,
  ChatWrapper,
  ChatWrapperGenerateContextStateOptions,
  ChatWrapperGeneratedContextState,
  LlamaText,
} from "node-llama-cpp";

type LlamaTextFactory = typeof LlamaText;

/**
 * `wrapper`, but every generation opens with the wrapper's function-call prefix, so the grammar
 * makes the model pick one of the functions and fill in its parameters: it cannot answer in text.
 */
export function forceFunctionCall(wrapper: ChatWrapper, text: LlamaTextFactory): ChatWrapper {
  const functions = wrapper.settings.functions;
  const inject = text([functions.parallelism?.call.sectionPrefix ?? "", functions.call.prefix]);
  return overrideContextState(wrapper, (state) => ({
    contextText: state.contextText,
    stopGenerationTriggers: state.stopGenerationTriggers,
    noPrefixTrigger: { type: "functionCall", inject },
  }));
}

/**
 * `wrapper`, but the tools are always described in the prompt in the wrapper's own format, even
 * though the generation gets no `functions` (so no grammar and no call detection): the model
 * answers freely and the caller parses its text.
 */
export function describeFunctions(wrapper: ChatWrapper, functions: ChatModelFunctions): ChatWrapper {
  return overrideContextState(
    wrapper,
    (state) => {
      const { functionCall: _engaged, ...rest } = state as ChatWrapperGeneratedContextState & {
        functionCall?: unknown;
      };
      return rest as ChatWrapperGeneratedContextState;
    },
    { availableFunctions: functions, documentFunctionParams: true },
  );
}

function overrideContextState(
  wrapper: ChatWrapper,
  transform: (state: ChatWrapperGeneratedContextState) => ChatWrapperGeneratedContextState,
  extraOptions: Partial<ChatWrapperGenerateContextStateOptions> = {},
): ChatWrapper {
  const generateContextState = (
    options: ChatWrapperGenerateContextStateOptions,
  ): ChatWrapperGeneratedContextState =>
    transform(wrapper.generateContextState({ ...options, ...extraOptions }));
  return new Proxy(wrapper, {
    get(target, property) {
      if (property === "generateContextState") return generateContextState;
      const value: unknown = Reflect.get(target, property, target);
      // Bound to the real wrapper: its methods may use private fields a proxy does not have.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
