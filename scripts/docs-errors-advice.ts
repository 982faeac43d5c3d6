/** What to do about each exported error, one line each (docs/reference/errors.md). */
export const ADVICE: Readonly<Record<string, string>> = {
  ApprovalAlreadyDecidedError:
    "Read the run's pending calls again (`queue.get(runId)`, `forge runs show`) and decide only those still undecided.",
  ApprovalNotPendingError:
    "Use a call id from this run's `approval.pending` (`pendingCallIds` lists them); omit `callId` to decide every undecided call.",
  ApprovalRunClosedError:
    "Nothing to decide: the run ended (`status`). Enqueue a new run if the work is still wanted.",
  AwaitingApprovalError:
    "Not a failure. Store `snapshot` and `meta`, ask a person about `pending`, then `runner.resume(workflow, snapshot, { meta, decisions })` ([Human approval](../guides/approval.md)).",
  BackendError:
    "Read `statusCode` and `body`. 503: the server is unreachable (is it running, is `baseUrl` right?); 408: raise `timeoutMs`; 400 with a context message: a smaller history or a larger window; 429/5xx are retried already ([client retries](../guides/production.md#client-retries)).",
  BudgetResolutionError:
    "Pass the budget yourself: `budgetMode: BudgetMode.MANUAL` with `manualTokens`, or start the server with an explicit context (`-c`).",
  BullmqMissingError: "`npm install bullmq@6 ioredis@5`.",
  CheckpointMismatchError:
    "The workflow changed since the run started (`field`, `expected`, `found`). Resume with the definition it started under, or start the run afresh.",
  ContextBudgetExceeded:
    "Even compacted, the history is over budget: raise `budgetTokens` (a larger window), shorten tool results, or keep fewer messages pinned.",
  ContextDiscoveryError:
    "The server's `/props` had no usable `n_ctx`: pass the budget yourself instead of discovering it.",
  EndpointPoolClosedError:
    "Create a new `EndpointPool`; close the pool only after the runs using it have finished.",
  ProxyConfigError:
    "Fix the option the message names: `callConfidence` takes a probability above 0 and at most 1, and needs an OpenAI-compatible backend (llama-server, vLLM) whose answers carry logprobs.",
  EndpointPoolConfigError:
    "Fix the endpoint list the message names: at least one URL, no duplicates, `slots` for every Ollama endpoint.",
  EndpointsUnavailableError:
    "No server of the pool answered `/health` for `unavailableTimeoutMs`: start one, or check `endpoints.status()`. A queue worker retries the run from its checkpoint.",
  EvalTraceError:
    "The file (`file`, `line`) is not an eval traces file: pass the `.traces.jsonl` an eval run wrote.",
  ForgeError:
    "The base class: `instanceof ForgeError` catches every error of the library; `messages`, when set, is the run's history so far.",
  HardwareDetectionError:
    "Pass the budget or launch options yourself instead of relying on detection, and report the tool output in an issue.",
  InvalidMessageError:
    "Fix the history at `field` (`issues` lists every problem): messages need `role`, string `content` and `metadata.type`. Build them with `createMessage`.",
  InvalidResponseError:
    "A custom `LLMClient` returned the wrong shape: return a `ToolCall[]` or `{ content }` (`received` shows what came back).",
  InvalidSnapshotError:
    "The stored snapshot is damaged or not a workflow's (`field`). Store `actor.getPersistedSnapshot()` and its checkpoint `meta` unchanged.",
  LeaseLostError:
    "Another worker owns the run now (this one was frozen or slow past its lock). Nothing to do: the run continues there; make sure workers are not starved of CPU for longer than `lockMs`.",
  LlamaServerNotFoundError:
    "Install llama.cpp (`brew install llama.cpp`, a release build), put `llama-server` on `PATH` or set `LLAMA_SERVER_PATH`; in a clone, `npm run setup:llama-server`.",
  MaxIterationsError:
    "The model did not finish within `maxIterations` LLM calls (`completedSteps`, `pendingSteps` say how far it got). Raise the limit, simplify the workflow, or try a stronger model ([tuning](../guides/tuning-guardrails.md)).",
  McpSdkMissingError: "`npm install @modelcontextprotocol/sdk@1`.",
  OptionalPeerMissingError:
    "An optional peer the feature loads on first use is not installed: run the command in the message (also its `install` field) next to forge-guardrails.",
  OtelSdkMissingError:
    "`startOtlpExport` needs the OpenTelemetry SDK: run the `npm install @opentelemetry/…` command in the message, or give `otelObserver` your own `tracer` and `meter`.",
  McpToolError:
    "Not thrown at you: the model reads it as a tool error and may retry. Check the server's message if runs keep failing on it.",
  McpApprovalRequiredError:
    "The served workflow parked for approval and the MCP client cannot be asked: use a client with elicitation, or run the workflow on a queue and decide with `forge runs approve`.",
  McpServeKeyRequiredError:
    "Pass a bearer key (`--key`, `FORGE_MCP_KEY`, or `key` in `serveMcp`'s HTTP transport), or listen on 127.0.0.1.",
  McpWorkflowToolNameError: "Rename the workflow to 1–128 letters, digits, `_`, `-` or `.`, once per server.",
  McpToolNameCollisionError:
    "Two servers offer one name (`toolName`, `sources`): turn `prefix: true` on, rename a server, or filter one tool out.",
  McpToolRemovedError:
    "The server removed the tool mid-run; the model reads it as a tool error. Build the next workflow from a fresh `mcpToolDefs`.",
  ModelNotFoundError: "Check `modelPath`: the GGUF file must exist and be a file.",
  NodeLlamaCppMissingError: "`npm install node-llama-cpp@3`.",
  OutcomeUnknownError:
    "An `unsafe` call may or may not have happened before the crash (`toolName`, `callId`): check the effect by its idempotency key, then resume with the default `unsafeInterrupted` (tell the model) or start afresh.",
  PortInUseError:
    "Another process listens on `port`: stop it or choose another port (`--port`, `--backend-port`).",
  PostgresMissingError: "`npm install bullmq@6 pg@8` (`missing` names what is absent).",
  PrerequisiteError:
    'The model kept skipping a prerequisite (`missingPrereqs`): describe the order in the system prompt, raise `maxPrereqViolations`, or offer fewer tools (`toolSubsets: "steps"`).',
  PromptTemplateError:
    "Every `{name}` in the system prompt needs a `promptVars.name`, and every var a placeholder; write `{{` and `}}` for literal braces.",
  ProxyHttpError:
    "What a proxy client receives as an HTTP error: see [proxy endpoints and headers](proxy-http.md#errors) for each `kind`.",
  QueueFencedError:
    "This process lost the embedded queue's directory to another (it was frozen past the lock's 10 s). Its worker stops (`forge worker` exits 1); restart it, and keep one worker process per directory.",
  RankConflictError: "Name only `rank` (lower is served first); drop the deprecated `priority`.",
  RunPayloadTooLargeError:
    "The run's input is over `maxPayloadBytes` (`sizeBytes` > `limitBytes`): put large inputs in a file or store the tools read, and a reference in the message.",
  RunQueueClosedError: "Open the queue again; close it only after the last call on it.",
  RunQueueConnectionError:
    "Redis or PostgreSQL could not be reached: check the URL, that the server runs, and its credentials.",
  RunQueueStateError:
    "Read the message: one process per embedded directory may take runs; producers open it beside the worker; prunes run on the worker.",
  ScriptedClientError:
    "A test's script does not match what the code asked: add the missing step, or remove the unused ones.",
  ServerCrashedError:
    "llama-server died (`exitCode`, `signal`, `stderrTail`): often out of memory (a smaller `-c` or model, fewer GPU layers). `supervision: {}` restarts it.",
  ServerStartError:
    "llama-server did not become ready (`kind`, `stderrTail`): a bad model path, too little memory, or a start-up timeout on a slow disk.",
  SlotWorkerError: "Call `start()` before `submit()`, and do not use a worker after `stop()`.",
  StepEnforcementError:
    'The model kept calling the terminal tool before the required steps (`pendingSteps`): name the steps in the system prompt, raise `maxPrematureAttempts`, or try `toolSubsets: "steps"`.',
  StreamError:
    "The server's stream was cut or malformed; streams are retried (`streamRetries`). Persistent: check a proxy or load balancer between you and the server.",
  ThinkingNotSupportedError: "The model cannot think: drop `think: true` (leave it unset for auto).",
  ToolCallError:
    "The model answered without a valid call after every nudge (`rawResponse` is its last answer). Try `forceToolChoiceOnRetry`, a `repairToolCall` hook, clearer tool descriptions, or a stronger model.",
  ToolCallRepairError:
    "Your `repairToolCall` hook threw or returned something other than a list of calls; the hook's error is the `cause`.",
  ToolExecutionError:
    "A tool kept failing for `maxToolErrors` batches (`toolName`): fix the tool, or make its error text tell the model what to change.",
  ToolOutputError:
    "The tool (`toolName`) returned something that cannot be serialized: return a string or plain JSON.",
  ToolResolutionError:
    "Throw it from a tool when valid arguments found nothing (no such id): the model is told, without counting a tool error.",
  ToolTimeoutError:
    "Not thrown at you: the model reads it and the run goes on. Raise `timeoutMs` / `toolTimeoutMs` (an MCP server's `timeoutMs` for its tools), or make the tool honour its `signal`.",
  UnsupportedModelError:
    "The sampling map does not know this model: drop `recommendedSampling` and set `temperature` (and the rest) yourself; the message lists the known families.",
  WatchReplayError:
    "The trace cannot be replayed with the workflow and options given (`runId`): replay it with the workflow it was recorded with.",
  WatchReportError:
    "The watch server could not be reached at `url`: start `forge watch` and pass the URL it printed, token included.",
  WatchRunFileError:
    "A damaged line in a run file (`file`, `line`) was skipped; the rest of the run still shows.",
  WorkflowCancelledError:
    "The run was cancelled through its signal; `completedSteps` and `messages` let you resume, discard or log it.",
  WorkflowDefinitionError:
    "Fix the definition the message names (a terminal tool that is not among the tools, an unknown required step, a bad tool name, …).",
};
