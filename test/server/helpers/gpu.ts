/** Whether this machine has a GPU, so tests of the GPU-less fallback can skip where there is one. */
import { existsSync, readdirSync } from "node:fs";

/** True when an NVIDIA device node, AMD's KFD, or an amdgpu card with a VRAM figure exists. */
export const gpuPresent =
  existsSync("/dev/nvidia0") ||
  existsSync("/dev/kfd") ||
  (existsSync("/sys/class/drm") &&
    readdirSync("/sys/class/drm").some((card) =>
      existsSync(`/sys/class/drm/${card}/device/mem_info_vram_total`),
    ));
