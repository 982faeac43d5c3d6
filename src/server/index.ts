/** Server management: the llama-server / Ollama lifecycle, GPU detection and budget resolution. */
export { fetchServerProps, parseServerProps, type ServerProps } from "../clients/llama-server/props.ts";
export {
  checkManualTokens,
  contextFlagForSlot,
  halveContext,
  OLLAMA_VRAM_TIERS,
  ollamaTierTokens,
} from "./budget.ts";
export { BudgetMode, isBudgetMode } from "./budget-mode.ts";
export {
  errorOfFailure,
  PortInUseError,
  portInUseMessage,
  ServerCrashedError,
  type ServerExit,
  type ServerFailure,
  ServerStartError,
} from "./errors.ts";
export {
  type AmdSysfsGpu,
  type DetectHardwareOptions,
  detectHardware,
  type GpuInfo,
  type HardwareDetection,
  type HardwareProfile,
  hardwareFromGraphics,
  readAmdSysfsVram,
  type SkippedGpu,
} from "./hardware.ts";
export {
  buildLlamaServerArgs,
  KV_CACHE_TYPES,
  type KvCacheType,
  type LaunchConfig,
  type LaunchOptions,
  type ListenAddress,
  launchConfigSchema,
  sameLaunchConfig,
} from "./launch-config.ts";
export {
  cachedLlamaServerPath,
  LLAMA_SERVER_PATH_ENV,
  LlamaServerNotFoundError,
  resolveLlamaServerPath,
} from "./llama-server-path.ts";
export { defaultServerLogger, type ServerLogger } from "./logger.ts";
export {
  createServerManagerMachine,
  type ServerBackend,
  type ServerManagerActor,
  type ServerManagerContext,
  type ServerManagerEmitted,
  type ServerManagerEvent,
  type ServerManagerInput,
  type ServerManagerMachine,
  type ServerManagerSnapshot,
  type ServerStatus,
  serverStatusOf,
} from "./server-manager.machine.ts";
export {
  type ServerInfo,
  ServerManager,
  type ServerManagerEvents,
  type ServerManagerOptions,
} from "./server-manager.ts";
export {
  awaitReadyLogic,
  createServerProcessLogic,
  type LivenessProbeInput,
  livenessProbeLogic,
  ollamaConnectLogic,
  ollamaUnloadLogic,
  preparePortLogic,
  type ServerProcessDeps,
  type ServerProcessEvent,
  type ServerProcessInput,
} from "./server-manager-actors.ts";
export {
  type BackendSetup,
  type NumCtxClient,
  type SetupBackendOptions,
  setupBackend,
} from "./setup-backend.ts";
export {
  DEFAULT_SUPERVISION,
  type SupervisionOptions,
  type SupervisionPolicy,
  supervisionPolicySchema,
} from "./supervision.ts";
