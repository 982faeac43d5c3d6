/** The loop: `WorkflowRunner` (run, resume, checkpoints), `runInference` (the front half) and `SlotWorker`. */
export {
  type Checkpoint,
  type CheckpointMeta,
  MACHINE_VERSION,
  workflowDefinitionHash,
} from "./checkpoint.ts";
export { errorFromOutput } from "./failure.ts";
export { type InferenceResult, type RunInferenceOptions, runInference } from "./inference.ts";
export {
  type ResumeOptions,
  type RunOptions,
  type WorkflowHooks,
  WorkflowRunner,
  type WorkflowRunnerOptions,
} from "./runner.ts";
export { SlotWorker, SlotWorkerError, type SubmitOptions } from "./slot-worker.ts";
