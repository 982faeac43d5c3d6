/**
 * GPU detection for budget resolution: total VRAM of the NVIDIA and AMD GPUs, read through
 * `systeminformation` (nvidia-smi for NVIDIA) and the amdgpu driver's sysfs files for AMD.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { HardwareDetectionError } from "../core/errors.ts";

/** One GPU whose VRAM is known. */
export interface GpuInfo {
  vendor: "nvidia" | "amd";
  name: string;
  /** PCI address as lspci prints it (`01:00.0`), when known. */
  busAddress: string | null;
  vramTotalMb: number;
  /** Where the VRAM figure came from. */
  source: "nvidia-smi" | "amdgpu-sysfs" | "systeminformation";
}

/** The machine's usable GPUs. Total VRAM only: a stable number that does not move with allocations. */
export interface HardwareProfile {
  gpus: GpuInfo[];
  /** The GPU names joined with ` + `. */
  gpuName: string;
  /** Sum over `gpus`, in MiB (Ollama sizes its default context from the total). */
  vramTotalMb: number;
}

/** A graphics controller that was seen but not counted, and why. */
export interface SkippedGpu {
  name: string;
  reason: string;
}

/** What {@link hardwareFromGraphics} found: the profile (null without a usable GPU) and what it skipped. */
export interface HardwareDetection {
  profile: HardwareProfile | null;
  skipped: SkippedGpu[];
}

/** An AMD GPU's VRAM as the amdgpu driver reports it in sysfs. */
export interface AmdSysfsGpu {
  busAddress: string;
  vramTotalMb: number;
}

/** The fields of `systeminformation.graphics()` this module reads; the rest passes through. */
export const graphicsDataSchema = z.object({
  controllers: z.array(
    z.looseObject({
      vendor: z.string().nullish(),
      vendorId: z.string().nullish(),
      model: z.string().nullish(),
      name: z.string().nullish(),
      busAddress: z.string().nullish(),
      vram: z.number().nullish(),
      vramDynamic: z.boolean().nullish(),
      memoryTotal: z.number().nullish(),
    }),
  ),
});
type Controller = z.output<typeof graphicsDataSchema>["controllers"][number];

const MIB = 1024 * 1024;

/**
 * The GPUs in a `systeminformation.graphics()` result, with their VRAM.
 *
 * NVIDIA counts only with nvidia-smi's `memory.total` (without the driver, lspci reports a PCI
 * BAR size, not VRAM). AMD takes the amdgpu sysfs figure for its PCI address; elsewhere than Linux
 * it trusts `vram` (the Windows registry / macOS report the real size), while on Linux `vram` is a
 * BAR size again, so it is skipped. Integrated GPUs (`vramDynamic`) and other vendors are skipped.
 * @throws {HardwareDetectionError} when `graphics` is not the shape systeminformation documents.
 */
export function hardwareFromGraphics(
  graphics: unknown,
  options: { amdSysfs?: readonly AmdSysfsGpu[]; platform?: NodeJS.Platform } = {},
): HardwareDetection {
  const parsed = graphicsDataSchema.safeParse(graphics);
  if (!parsed.success) {
    throw new HardwareDetectionError(
      `systeminformation.graphics() returned an unexpected shape: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  const platform = options.platform ?? process.platform;
  const sysfs = new Map((options.amdSysfs ?? []).map((gpu) => [normalizeBusAddress(gpu.busAddress), gpu]));
  const gpus: GpuInfo[] = [];
  const skipped: SkippedGpu[] = [];
  for (const controller of parsed.data.controllers) {
    const outcome = gpuOfController(controller, sysfs, platform);
    if ("reason" in outcome) skipped.push(outcome);
    else gpus.push(outcome);
  }
  // An amdgpu card that systeminformation did not list (no lspci) still counts.
  const listed = new Set(gpus.map((gpu) => gpu.busAddress));
  for (const [busAddress, gpu] of sysfs) {
    if (listed.has(busAddress)) continue;
    gpus.push({
      vendor: "amd",
      name: `AMD GPU ${busAddress}`,
      busAddress,
      vramTotalMb: gpu.vramTotalMb,
      source: "amdgpu-sysfs",
    });
  }
  if (gpus.length === 0) return { profile: null, skipped };
  return {
    profile: {
      gpus,
      gpuName: gpus.map((gpu) => gpu.name).join(" + "),
      vramTotalMb: gpus.reduce((total, gpu) => total + gpu.vramTotalMb, 0),
    },
    skipped,
  };
}

function gpuOfController(
  controller: Controller,
  sysfs: ReadonlyMap<string, AmdSysfsGpu>,
  platform: NodeJS.Platform,
): GpuInfo | SkippedGpu {
  const name = (controller.name || controller.model || controller.vendor || "unknown GPU").trim();
  const vendor = vendorOf(controller);
  const busAddress = controller.busAddress ? normalizeBusAddress(controller.busAddress) : null;
  if (vendor === null)
    return { name, reason: `vendor '${controller.vendor ?? ""}' is neither NVIDIA nor AMD` };
  if (controller.vramDynamic) return { name, reason: "integrated GPU sharing system memory" };
  if (vendor === "nvidia") {
    const total = controller.memoryTotal;
    if (typeof total === "number" && Number.isFinite(total) && total > 0) {
      return { vendor, name, busAddress, vramTotalMb: Math.round(total), source: "nvidia-smi" };
    }
    return { name, reason: "nvidia-smi did not report its memory (is the NVIDIA driver installed?)" };
  }
  const fromSysfs = busAddress === null ? undefined : sysfs.get(busAddress);
  if (fromSysfs) {
    return { vendor, name, busAddress, vramTotalMb: fromSysfs.vramTotalMb, source: "amdgpu-sysfs" };
  }
  const vram = controller.vram;
  if (platform !== "linux" && typeof vram === "number" && Number.isFinite(vram) && vram > 0) {
    return { vendor, name, busAddress, vramTotalMb: Math.round(vram), source: "systeminformation" };
  }
  return { name, reason: "no amdgpu sysfs VRAM figure (lspci's size is a PCI BAR, not VRAM)" };
}

function vendorOf(controller: Controller): "nvidia" | "amd" | null {
  const vendorId = (controller.vendorId ?? "").toLowerCase();
  const text = `${controller.vendor ?? ""} ${controller.model ?? ""} ${controller.name ?? ""}`;
  if (vendorId === "10de" || /nvidia/i.test(text)) return "nvidia";
  if (vendorId === "1002" || /advanced micro devices|\bAMD\b|\bATI\b|radeon/i.test(text)) return "amd";
  return null;
}

/** `0000:03:00.0` → `03:00.0` (lspci leaves out PCI domain 0). */
function normalizeBusAddress(address: string): string {
  return address
    .trim()
    .replace(/^0000:/, "")
    .toLowerCase();
}

/**
 * The AMD GPUs the amdgpu driver exposes under `drmRoot` (`/sys/class/drm`): each `cardN` whose
 * `device/vendor` is `0x1002`, with `device/mem_info_vram_total` (bytes) and the PCI address from
 * `device/uevent`. Missing files mean no such GPU, never an error.
 */
export async function readAmdSysfsVram(drmRoot = "/sys/class/drm"): Promise<AmdSysfsGpu[]> {
  const cards = await readdir(drmRoot).catch(() => [] as string[]);
  const gpus: AmdSysfsGpu[] = [];
  for (const card of cards.filter((entry) => /^card\d+$/.test(entry)).sort()) {
    const device = join(drmRoot, card, "device");
    const [vendor, vramBytes, uevent] = await Promise.all(
      ["vendor", "mem_info_vram_total", "uevent"].map((file) =>
        readFile(join(device, file), "utf8").then(
          (text) => text.trim(),
          () => null,
        ),
      ),
    );
    const bytes = Number(vramBytes);
    const slot = /^PCI_SLOT_NAME=(.+)$/m.exec(uevent ?? "")?.[1];
    if (vendor !== "0x1002" || !Number.isFinite(bytes) || bytes <= 0 || !slot) continue;
    gpus.push({ busAddress: normalizeBusAddress(slot), vramTotalMb: Math.round(bytes / MIB) });
  }
  return gpus;
}

/** Options of {@link detectHardware}. */
export interface DetectHardwareOptions {
  /** Replaces `systeminformation.graphics()` (tests). */
  graphics?: () => Promise<unknown>;
  /** Where to look for amdgpu cards; default `/sys/class/drm`. */
  drmRoot?: string;
  platform?: NodeJS.Platform;
  /** Receives one line per skipped controller. */
  onSkipped?: (gpu: SkippedGpu) => void;
}

/**
 * Detect the NVIDIA and AMD GPUs and their total VRAM. Returns `null` when there is none (CPU-only
 * machines, or GPUs whose VRAM cannot be read).
 * @throws {HardwareDetectionError} when systeminformation fails or answers in an unknown shape.
 * @example
 * const hardware = await detectHardware();
 * console.log(hardware ? `${hardware.gpuName}: ${hardware.vramTotalMb} MiB` : "no GPU");
 */
export async function detectHardware(options: DetectHardwareOptions = {}): Promise<HardwareProfile | null> {
  const platform = options.platform ?? process.platform;
  let graphics: unknown;
  try {
    graphics = await (options.graphics ?? loadGraphics)();
  } catch (error) {
    throw new HardwareDetectionError(
      `systeminformation.graphics() failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const amdSysfs = platform === "linux" ? await readAmdSysfsVram(options.drmRoot) : [];
  const detection = hardwareFromGraphics(graphics, { amdSysfs, platform });
  for (const gpu of detection.skipped) options.onSkipped?.(gpu);
  return detection.profile;
}

async function loadGraphics(): Promise<unknown> {
  const systeminformation = await import("systeminformation");
  return systeminformation.graphics();
}
